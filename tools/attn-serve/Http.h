//===- Http.h - attn-serve's HTTP layer over cpp-httplib --------*- C++ -*-===//
//
// The one part of the server that includes httplib.h (Debian's split build
// of cpp-httplib 0.11.4, whose class layouts depend on the defines in its
// pkg-config file: keeping them to one file keeps them consistent). Handlers
// see plain requests and responses; a response body is a string or a stream
// produced a piece at a time (server-sent events).
//
// What the layer does for every route:
//  - the API key: with one set, every path but the public ones needs
//    "Authorization: Bearer KEY" (401 otherwise), checked before the body is
//    read;
//  - the body limit, with Content-Length or chunked (413);
//  - error bodies for what no handler answers (404, 405, 413, a malformed
//    request, an exception), through the `errorBody` callback;
//  - connections: one task per connection on an elastic pool of threads,
//    which grows while every thread is busy (idle keep-alive connections
//    hold a thread each in cpp-httplib 0.11, so a fixed pool starves) and
//    shrinks back when threads stay idle; keep-alive and read timeouts are
//    short, so an idle client lets its thread go within seconds.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_HTTP_H
#define ATTN_SERVE_HTTP_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attn::serve {

struct HttpRequest {
  std::string method, path, body;
  /// Headers as received (names as the client wrote them).
  std::vector<std::pair<std::string, std::string>> headers;
  /// The value of header `name` (case-insensitive), or "".
  std::string header(std::string_view name) const;
};

/// Writes one piece of a streamed body; false once the client is gone.
using StreamWrite = std::function<bool(std::string_view)>;
/// Whether the client is still connected (a closed socket reads as EOF).
using StreamAlive = std::function<bool()>;
enum class StreamStep { More, Done, Abort };
/// Produces a streamed body: called again and again until it returns Done
/// (the body is complete) or Abort (the connection is dropped). It may
/// block for a while in each call, and should check `alive` when it has
/// nothing to write.
using StreamProducer = std::function<StreamStep(const StreamWrite &, const StreamAlive &)>;

struct HttpResponse {
  int status = 200;
  std::string contentType = "application/json";
  std::string body;
  /// When set, the body is streamed (chunked) from it instead.
  StreamProducer stream;
  std::vector<std::pair<std::string, std::string>> headers;
};

using HttpHandler = std::function<void(const HttpRequest &, HttpResponse &)>;
/// The JSON body of an error the layer answers itself: status, message,
/// OpenAI error type and code ("" for null).
using ErrorFormatter = std::function<std::string(int status, const std::string &message,
                                                 const std::string &type, const std::string &code)>;

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  /// Empty: no key needed.
  std::string apiKey;
  /// Paths served without the key.
  std::vector<std::string> publicPaths;
  size_t maxBodyBytes = 1 << 20;
  /// Seconds a connection may sit between requests, and may take to send
  /// one / to accept our writes.
  int keepAliveSeconds = 5;
  int readTimeoutSeconds = 10;
  int writeTimeoutSeconds = 10;
  /// Requests per connection before it is closed.
  size_t keepAliveMaxCount = 100;
  /// Threads kept when idle, and the most there may be (each open
  /// connection holds one; past it, connections wait for a thread).
  size_t minThreads = 4;
  size_t maxThreads = 512;
  /// Seconds an extra thread stays idle before it exits.
  int idleThreadSeconds = 10;
  /// One line per request on stderr.
  bool logRequests = true;
};

class HttpServer {
public:
  HttpServer(HttpOptions options, ErrorFormatter errorBody);
  ~HttpServer();
  HttpServer(const HttpServer &) = delete;
  HttpServer &operator=(const HttpServer &) = delete;

  void get(const std::string &path, HttpHandler handler);
  void post(const std::string &path, HttpHandler handler);

  /// Binds host:port (port 0: any free port); false with a message.
  bool bind(std::string &error);
  /// The bound port.
  int port() const;
  /// Serves until stop(); false when the listening socket failed.
  bool run();
  /// Closes the listening socket; run() returns once the connections end.
  void stop();
  /// Threads of the connection pool now (for /metrics).
  size_t threads() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace attn::serve

#endif // ATTN_SERVE_HTTP_H
