//===- ToolSupport.cpp - shared pieces of the runtime's command-line tools ===//

#include "ToolSupport.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attn::tools {

int fail(const char *tool, const std::string &message) {
  std::fprintf(stderr, "%s: error: %s\n", tool, message.c_str());
  return 1;
}

void warn(const char *tool, const std::string &message) {
  std::fprintf(stderr, "%s: warning: %s\n", tool, message.c_str());
}

bool parseFloat(std::string_view text, float &value) {
  double d;
  auto result = std::from_chars(text.data(), text.data() + text.size(), d);
  if (text.empty() || result.ec != std::errc() ||
      result.ptr != text.data() + text.size() || !std::isfinite(d))
    return false;
  value = static_cast<float>(d);
  return std::isfinite(value);
}

static std::string_view trim(std::string_view s) {
  while (!s.empty() && s.front() == ' ')
    s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ')
    s.remove_suffix(1);
  return s;
}

bool parseTokenList(const std::string &text, const char *what,
                    std::vector<int32_t> &tokens, std::string &error) {
  if (trim(text).empty()) {
    error = std::string(what) + " is empty: it needs at least one token";
    return false;
  }
  std::string_view rest = text;
  while (true) {
    size_t comma = rest.find(',');
    std::string_view item = trim(rest.substr(0, comma));
    if (item.empty()) {
      error = "malformed " + std::string(what) + " '" + text + "': empty item";
      return false;
    }
    int64_t id;
    if (!parseInteger(item, id)) {
      bool digits = item.find_first_not_of("-+0123456789") == item.npos;
      error = "malformed " + std::string(what) + " '" + text + "': '" +
              std::string(item) +
              (digits ? "' is out of range" : "' is not an integer");
      return false;
    }
    if (id < 0) {
      error = "token id " + std::to_string(id) + " in " + what +
              " is negative";
      return false;
    }
    if (id > INT32_MAX) {
      error = "token id " + std::to_string(id) + " in " + what +
              " is out of range";
      return false;
    }
    tokens.push_back(static_cast<int32_t>(id));
    if (comma == rest.npos)
      return true;
    rest.remove_prefix(comma + 1);
  }
}

bool readTextFile(const std::string &path, std::string &text,
                  std::string &error) {
  // O_NONBLOCK: a FIFO fails below instead of waiting for a writer.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "'" + path + "' is not a regular file";
    ::close(fd);
    return false;
  }
  text.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::read(fd, &text[done], text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = "cannot read '" + path + "': " +
              (n < 0 ? std::strerror(errno) : "unexpected end of file");
      ::close(fd);
      return false;
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  return true;
}

std::string joinTokens(const std::vector<int32_t> &tokens) {
  std::string out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i)
      out += ',';
    out += std::to_string(tokens[i]);
  }
  return out;
}

bool tokenize(const attnrt_tokenizer *tokenizer, std::string_view text,
              int flags, const std::string &what, std::vector<int32_t> &ids,
              std::string &error) {
  char message[1024];
  int64_t count = 0;
  // Roughly one token per 3 bytes of English; a second call if not enough.
  ids.resize(text.size() / 2 + 16);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (attnrt_tokenize(tokenizer, text.data(), text.size(), flags, ids.data(),
                        static_cast<int64_t>(ids.size()), &count, message,
                        sizeof(message)) != ATTNRT_OK) {
      error = what + ": " + message;
      return false;
    }
    if (static_cast<size_t>(count) <= ids.size())
      break;
    ids.resize(static_cast<size_t>(count));
  }
  ids.resize(static_cast<size_t>(count));
  return true;
}

bool detokenize(const attnrt_tokenizer *tokenizer,
                const std::vector<int32_t> &ids, bool skipSpecial,
                std::string &text, std::string &error) {
  char message[1024];
  size_t length = 0;
  if (attnrt_detokenize(tokenizer, ids.data(), static_cast<int64_t>(ids.size()),
                        skipSpecial, nullptr, 0, &length, message,
                        sizeof(message)) != ATTNRT_OK) {
    error = message;
    return false;
  }
  text.assign(length + 1, '\0');
  if (attnrt_detokenize(tokenizer, ids.data(), static_cast<int64_t>(ids.size()),
                        skipSpecial, &text[0], text.size(), &length, message,
                        sizeof(message)) != ATTNRT_OK) {
    error = message;
    return false;
  }
  text.resize(length);
  return true;
}

static void logLine(void *tool, const char *line) {
  std::fprintf(stderr, "%s: %s\n", static_cast<const char *>(tool), line);
}

bool FolderOptions::isOption(std::string_view name) {
  return name == "--compiler" || name == "--cache-dir" || name == "--weight-format" ||
         name == "--head-format" || name == "--kv-format" || name == "--threads";
}

bool FolderOptions::parse(std::string_view name, const std::string &value,
                          std::string &error) {
  if (name == "--compiler") {
    compiler = value;
  } else if (name == "--cache-dir") {
    cacheDir = value;
  } else if (name == "--weight-format" || name == "--head-format") {
    if (!isWeightFormat(value)) {
      error = std::string(name) + " must be " + kWeightFormatChoices + ", got '" +
              value + "'";
      return false;
    }
    (name == "--weight-format" ? weightFormat : headFormat) = value;
  } else if (name == "--kv-format") {
    if (!isKvFormat(value)) {
      error = std::string("--kv-format must be ") + kKvFormatChoices + ", got '" + value + "'";
      return false;
    }
    kvFormat = value;
  } else if (name == "--threads") {
    if (!parseInteger(value, threads) || threads < 1 || threads > 4096) {
      error = "--threads must be an integer >= 1, got '" + value + "'";
      return false;
    }
  }
  return true;
}

attnrt_model *loadModelFolder(const char *tool, const std::string &dir,
                              int64_t context, const FolderOptions &options,
                              std::string &error, bool inspect,
                              const attnrt_communicator *group) {
  auto optional = [](const std::string &text) { return text.empty() ? nullptr : text.c_str(); };
  attnrt_load_options load = attnrt_load_default_options();
  load.inspect = inspect;
  load.weight_format = optional(options.weightFormat);
  load.head_format = optional(options.headFormat);
  load.kv_format = optional(options.kvFormat);
  load.context = context;
  load.compiler = optional(options.compiler);
  load.cache_dir = optional(options.cacheDir);
  if (!group || group->rank == 0) {
    load.log = logLine;
    load.log_user = const_cast<char *>(tool);
  }
  char message[1024];
  attnrt_model *model =
      attnrt_model_load_dir_parallel(dir.c_str(), &load, group, message, sizeof(message));
  if (!model)
    error = message;
  return model;
}

bool checkTokenizerFits(const attnrt_tokenizer *tokenizer,
                        const attnrt_model *model, const std::string &dir,
                        std::string &error) {
  int64_t ids = attnrt_tokenizer_vocab_size(tokenizer);
  int64_t vocab = attnrt_model_vocab_size(model);
  if (ids <= vocab)
    return true;
  error = dir + "/tokenizer.json has ids up to " + std::to_string(ids - 1) +
          " but the model's vocabulary is " + std::to_string(vocab) + " tokens";
  return false;
}

} // namespace attn::tools
