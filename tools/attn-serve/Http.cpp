//===- Http.cpp - attn-serve's HTTP layer over cpp-httplib ----------------===//

#include "Http.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <sys/socket.h>
#include <thread>

namespace attn::serve {

namespace {

/// Connections the kernel queues before they are accepted.
constexpr int kListenBacklog = 1024;

/// cpp-httplib runs each connection as one task that holds its thread for
/// the connection's life, idle keep-alive time included. A fixed pool of N
/// threads is therefore stalled by N idle clients; this pool instead starts
/// a thread whenever a task finds none idle (up to maxThreads; past that,
/// tasks queue) and lets threads beyond minThreads exit after idleSeconds
/// without work. A task goes to the thread that became idle last, so under
/// a light load the same few threads serve it and the others do time out
/// (waking idle threads in turn would keep every one of them alive).
class ElasticPool : public httplib::TaskQueue {
public:
  ElasticPool(size_t minThreads, size_t maxThreads, int idleSeconds)
      : minThreads(minThreads), maxThreads(std::max<size_t>(maxThreads, 1)), idleTime(idleSeconds) {
  }
  ~ElasticPool() override { shutdown(); }

  void enqueue(std::function<void()> fn) override {
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mutex);
      done.swap(retired);
      if (!idle.empty()) {
        Worker *worker = idle.back();
        idle.pop_back();
        worker->task = std::move(fn);
        worker->wake.notify_one();
      } else if (workers.size() < maxThreads) {
        auto worker = std::make_unique<Worker>();
        worker->task = std::move(fn);
        Worker *raw = worker.get();
        worker->thread = std::thread([this, raw] { work(raw); });
        workers.push_back(std::move(worker));
      } else {
        tasks.push_back(std::move(fn));
      }
    }
    for (std::thread &thread : done)
      thread.join();
  }

  void shutdown() override {
    std::vector<std::unique_ptr<Worker>> running;
    std::vector<std::thread> done;
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      for (Worker *worker : idle)
        worker->wake.notify_one();
      running.swap(workers);
      done.swap(retired);
    }
    // Workers finish the queued tasks before they exit.
    for (auto &worker : running)
      worker->thread.join();
    for (std::thread &thread : done)
      thread.join();
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex);
    return workers.size();
  }

private:
  struct Worker {
    std::thread thread;
    std::condition_variable wake;
    std::function<void()> task;
  };

  void work(Worker *self) {
    std::unique_lock<std::mutex> lock(mutex);
    for (;;) {
      if (!self->task && !tasks.empty()) {
        self->task = std::move(tasks.front());
        tasks.pop_front();
      }
      if (self->task) {
        std::function<void()> task = std::move(self->task);
        self->task = nullptr;
        lock.unlock();
        task();
        lock.lock();
        continue;
      }
      if (stopping)
        return;
      idle.push_back(self);
      bool woken =
          self->wake.wait_for(lock, idleTime, [&] { return self->task != nullptr || stopping; });
      if (woken)
        continue; // enqueue took it off the idle list
      idle.erase(std::find(idle.begin(), idle.end(), self));
      if (workers.size() > minThreads) {
        // Joined by the next enqueue or the shutdown.
        auto it = std::find_if(workers.begin(), workers.end(),
                               [&](const auto &w) { return w.get() == self; });
        retired.push_back(std::move((*it)->thread));
        workers.erase(it);
        return;
      }
    }
  }

  const size_t minThreads, maxThreads;
  const std::chrono::seconds idleTime;
  mutable std::mutex mutex;
  std::vector<std::unique_ptr<Worker>> workers;
  /// Idle workers, the most recently idle last.
  std::vector<Worker *> idle;
  /// Tasks waiting for a thread (all maxThreads are busy).
  std::deque<std::function<void()>> tasks;
  std::vector<std::thread> retired;
  bool stopping = false;
};

bool equalsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) !=
        std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

std::string tooLargeMessage(size_t limit) {
  return "the request body is larger than the limit of " + std::to_string(limit) + " bytes";
}

/// Compares in a time that does not depend on where the strings differ
/// (the length may show; the key's bytes do not).
bool sameSecret(std::string_view given, std::string_view key) {
  if (given.size() != key.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i)
    diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

} // namespace

std::string HttpRequest::header(std::string_view name) const {
  for (const auto &entry : headers)
    if (equalsIgnoreCase(entry.first, name))
      return entry.second;
  return {};
}

struct HttpServer::Impl {
  HttpOptions options;
  ErrorFormatter errorBody;
  httplib::Server server;
  int boundPort = -1;
  /// The listening socket, as the socket options callback saw it.
  std::atomic<int> listenFd{-1};
  std::atomic<ElasticPool *> pool{nullptr};

  void setError(httplib::Response &res, int status, const std::string &message,
                const std::string &type = "invalid_request_error", const std::string &code = {}) {
    res.status = status;
    res.set_content(errorBody(status, message, type, code), "application/json");
  }

  HttpRequest convert(const httplib::Request &req) {
    HttpRequest request;
    request.method = req.method;
    request.path = req.path;
    for (const auto &entry : req.headers)
      request.headers.emplace_back(entry.first, entry.second);
    return request;
  }

  void respond(HttpResponse &response, httplib::Response &res) {
    res.status = response.status;
    for (const auto &entry : response.headers)
      res.set_header(entry.first.c_str(), entry.second);
    if (!response.stream) {
      res.set_content(response.body, response.contentType);
      return;
    }
    StreamProducer producer = std::move(response.stream);
    res.set_chunked_content_provider(
        response.contentType.c_str(), [producer](size_t, httplib::DataSink &sink) {
          bool written = true;
          StreamWrite write = [&](std::string_view piece) {
            if (piece.empty())
              return written;
            written = written && sink.write(piece.data(), piece.size());
            return written;
          };
          StreamAlive alive = [&] { return written && sink.is_writable(); };
          StreamStep step = producer(write, alive);
          if (step == StreamStep::Abort || !written)
            return false;
          if (step == StreamStep::Done)
            sink.done();
          return true;
        });
  }

  /// The key check, before any body is read.
  httplib::Server::HandlerResponse checkKey(const httplib::Request &req, httplib::Response &res) {
    if (options.apiKey.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    for (const std::string &path : options.publicPaths)
      if (req.path == path)
        return httplib::Server::HandlerResponse::Unhandled;
    std::string given = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    bool ok = given.size() > prefix.size() &&
              equalsIgnoreCase(std::string_view(given).substr(0, prefix.size()), prefix) &&
              sameSecret(given.substr(prefix.size()), options.apiKey);
    if (ok)
      return httplib::Server::HandlerResponse::Unhandled;
    setError(res, 401,
             given.empty() ? "You didn't provide an API key: give it in an Authorization "
                             "header as 'Bearer KEY' (the server was started with --api-key)"
                           : "Incorrect API key provided",
             "invalid_request_error", "invalid_api_key");
    res.set_header("WWW-Authenticate", "Bearer");
    return httplib::Server::HandlerResponse::Handled;
  }
};

HttpServer::HttpServer(HttpOptions options, ErrorFormatter errorBody)
    : impl(std::make_unique<Impl>()) {
  impl->options = std::move(options);
  impl->errorBody = std::move(errorBody);
  Impl *self = impl.get();
  httplib::Server &server = impl->server;
  const HttpOptions &o = impl->options;

  server.new_task_queue = [self] {
    const HttpOptions &o = self->options;
    auto *pool = new ElasticPool(o.minThreads, o.maxThreads, o.idleThreadSeconds);
    self->pool.store(pool);
    return pool;
  };
  server.set_keep_alive_timeout(o.keepAliveSeconds);
  server.set_keep_alive_max_count(std::max<size_t>(o.keepAliveMaxCount, 1));
  server.set_read_timeout(o.readTimeoutSeconds, 0);
  server.set_write_timeout(o.writeTimeoutSeconds, 0);
  // Bodies with a Content-Length over the limit are skipped by httplib
  // (413); chunked ones are cut by the reader in post().
  server.set_payload_max_length(o.maxBodyBytes);
  server.set_tcp_nodelay(true);
  // cpp-httplib's default sets SO_REUSEPORT, which lets a second server bind
  // the same port and silently take half of its connections: SO_REUSEADDR
  // alone restarts past TIME_WAIT but fails on a port in use.
  server.set_socket_options([self](int fd) {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    self->listenFd.store(fd);
  });

  server.set_pre_routing_handler([self](const httplib::Request &req, httplib::Response &res) {
    return self->checkKey(req, res);
  });
  // Every status >= 400 passes here; those without a body are the layer's own.
  auto errorHandler = [self](const httplib::Request &req, httplib::Response &res) {
    if (!res.body.empty() || res.is_chunked_content_provider_)
      return httplib::Server::HandlerResponse::Unhandled;
    int status = res.status;
    std::string message;
    if (status == 404)
      message = "Invalid URL (" + req.method + " " + req.path + ")";
    else if (status == 413)
      message = tooLargeMessage(self->options.maxBodyBytes);
    else if (status == 400)
      message = "malformed HTTP request";
    else
      message = "the request failed with HTTP status " + std::to_string(status);
    self->setError(res, status, message, status >= 500 ? "server_error" : "invalid_request_error");
    return httplib::Server::HandlerResponse::Handled;
  };
  server.set_error_handler(httplib::Server::HandlerWithResponse(errorHandler));
  server.set_exception_handler(
      [self](const httplib::Request &, httplib::Response &res, std::exception_ptr error) {
        std::string message = "internal error";
        try {
          std::rethrow_exception(error);
        } catch (const std::bad_alloc &) {
          message = "out of memory";
        } catch (const std::exception &e) {
          message = std::string("internal error: ") + e.what();
        } catch (...) {
        }
        self->setError(res, 500, message, "server_error");
      });
  if (o.logRequests)
    server.set_logger([](const httplib::Request &req, const httplib::Response &res) {
      std::fprintf(stderr, "attn-serve: %s %s %s %d\n", req.remote_addr.c_str(), req.method.c_str(),
                   req.path.c_str(), res.status);
    });
}

HttpServer::~HttpServer() = default;

void HttpServer::get(const std::string &path, HttpHandler handler) {
  Impl *self = impl.get();
  impl->server.Get(path, [self, handler](const httplib::Request &req, httplib::Response &res) {
    HttpRequest request = self->convert(req);
    HttpResponse response;
    handler(request, response);
    self->respond(response, res);
  });
}

void HttpServer::post(const std::string &path, HttpHandler handler) {
  Impl *self = impl.get();
  impl->server.Post(path, [self, handler](const httplib::Request &req, httplib::Response &res,
                                          const httplib::ContentReader &reader) {
    HttpRequest request = self->convert(req);
    size_t limit = self->options.maxBodyBytes;
    bool tooLarge = false;
    bool read = reader([&](const char *data, size_t length) {
      if (request.body.size() + length > limit) {
        tooLarge = true;
        return false;
      }
      request.body.append(data, length);
      return true;
    });
    if (!read) {
      // The rest of the body was not read: the connection cannot go on.
      res.set_header("Connection", "close");
      if (tooLarge || res.status == 413)
        self->setError(res, 413, tooLargeMessage(limit));
      else
        self->setError(res, 400, "could not read the request body");
      return;
    }
    HttpResponse response;
    handler(request, response);
    self->respond(response, res);
  });
}

bool HttpServer::bind(std::string &error) {
  const HttpOptions &o = impl->options;
  if (o.port == 0) {
    impl->boundPort = impl->server.bind_to_any_port(o.host);
  } else if (impl->server.bind_to_port(o.host, o.port)) {
    impl->boundPort = o.port;
  }
  if (impl->boundPort <= 0) {
    error = "cannot listen on " + o.host + ":" + std::to_string(o.port) +
            " (address in use, or not an address of this machine)";
    return false;
  }
  // cpp-httplib 0.11 listens with a backlog of 5: a burst of clients past it
  // has its SYNs dropped and waits a second or more to retry. listen() again
  // on the bound socket only sets a longer queue.
  ::listen(impl->listenFd.load(), kListenBacklog);
  return true;
}

int HttpServer::port() const { return impl->boundPort; }

bool HttpServer::run() {
  bool ok = impl->server.listen_after_bind();
  impl->pool.store(nullptr);
  return ok;
}

void HttpServer::stop() { impl->server.stop(); }

size_t HttpServer::threads() const {
  ElasticPool *pool = impl->pool.load();
  return pool ? pool->size() : 0;
}

} // namespace attn::serve
