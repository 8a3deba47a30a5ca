//===- SessionFuzzer.cpp - the runtime's argument and token validation ----===//
//
// The input is a program of C API calls on one model (the mock model of
// test/unit, which honours model_abi.h): prefill, decode, reset, generate,
// sampler creation and sampling, with token ids, counts, positions and
// sampling parameters taken from the input (out-of-range, negative, NaN and
// infinite values included). An independent model of the rules predicts
// each call's return code and the session position; every successful call
// is checked against a replay of the whole sequence on a second session, and
// every sampled token against the sampling contract (greedy is the lowest
// argmax, top-k keeps the k best, NaN is never picked, ...). Buffers are
// sized exactly, so any write past what the API promises is an ASan report.
//
//===----------------------------------------------------------------------===//

#include "FuzzUtil.h"

#include "attnrt/attnrt.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <string>
#include <vector>

using attn::fuzz::ByteReader;
using attn::fuzz::MemFile;

namespace {

constexpr float inf = std::numeric_limits<float>::infinity();
constexpr float nan = std::numeric_limits<float>::quiet_NaN();

/// The mock's weights: small values, so every logit is finite.
const std::string &weightsFile() {
  static MemFile file;
  static bool written = false;
  if (!written) {
    const int64_t vocab = 40, hidden = 6;
    std::vector<float> wte(vocab * hidden), mix(hidden * hidden),
        mixBias(hidden), headBias(vocab);
    auto fill = [](std::vector<float> &v, unsigned salt) {
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<float>(static_cast<int>((i * 7 + salt) % 17) - 8) /
               16.0f;
    };
    fill(wte, 1);
    fill(mix, 2);
    fill(mixBias, 3);
    fill(headBias, 4);
    std::string header = "{";
    std::string body;
    auto add = [&](const char *name, const std::vector<float> &v,
                   const std::string &shape) {
      if (header.size() > 1)
        header += ",";
      header += "\"" + std::string(name) + "\":{\"dtype\":\"F32\",\"shape\":" +
                shape + ",\"data_offsets\":[" + std::to_string(body.size()) +
                "," + std::to_string(body.size() + 4 * v.size()) + "]}";
      body.append(reinterpret_cast<const char *>(v.data()), 4 * v.size());
    };
    add("wte.weight", wte, "[40,6]");
    add("h.0.mix.weight", mix, "[6,6]");
    add("h.0.mix.bias", mixBias, "[6]");
    add("head.bias", headBias, "[40]");
    header += "}";
    header.append((8 - header.size() % 8) % 8, ' ');
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i)
      bytes[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    bytes += header + body;
    file.write(reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size());
    written = true;
  }
  return file.name();
}

attnrt_model *model() {
  static attnrt_model *m = [] {
    char error[512] = "";
    attnrt_model *loaded = attnrt_model_load(
        ATTN_FUZZ_MOCK_MODEL, weightsFile().c_str(), error, sizeof(error));
    FUZZ_CHECK(loaded, "loading the mock: %s", error);
    return loaded;
  }();
  return m;
}

int32_t tokenFrom(ByteReader &in) {
  uint8_t b = in.byte();
  if (b >= 0xF0)
    return in.value<int32_t>(); // Anything, mostly far out of range.
  return static_cast<int32_t>(b % 44) - 2; // -2 .. 41 around [0, 40).
}

float floatFrom(ByteReader &in) {
  static const float special[] = {0.0f,     -0.0f,    1.0f,     -1.0f,
                                  0.5f,     2.0f,     100.0f,   -100.0f,
                                  inf,      -inf,     nan,      1e-45f,
                                  1e-39f,   1e-30f,   1e30f,    3.4e38f,
                                  -3.4e38f, 0.999f,   1.0001f,  1e-7f};
  uint8_t b = in.byte();
  if (b < 2 * std::size(special))
    return special[b % std::size(special)];
  if (b >= 0xF0)
    return in.value<float>();
  return static_cast<float>(static_cast<int>(b) - 128) / 8.0f;
}

int64_t countFrom(ByteReader &in, int64_t lo, int64_t hi) {
  uint8_t b = in.byte();
  if (b == 0xFF)
    return in.value<int64_t>();
  return lo + b % (hi - lo + 1);
}

bool oneLine(const char *message) {
  return message[0] != '\0' && std::strchr(message, '\n') == nullptr;
}

/// True when `a` ranks before `b` in the sampler's order: higher logit,
/// then lower id; NaN ranks last.
bool ranksBefore(const std::vector<float> &l, int64_t a, int64_t b) {
  bool aNan = std::isnan(l[a]), bNan = std::isnan(l[b]);
  if (aNan != bNan)
    return bNan;
  if (!aNan && l[a] != l[b])
    return l[a] > l[b];
  return a < b;
}

void checkSample(const attnrt_sampler_params &p, const std::vector<float> &l,
                 int32_t token) {
  int64_t vocab = static_cast<int64_t>(l.size());
  int64_t best = -1;
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isnan(l[i]) && (best < 0 || l[i] > l[best]))
      best = i;
  if (best < 0) {
    FUZZ_CHECK(token == -1, "all NaN, yet token %d", token);
    return;
  }
  FUZZ_CHECK(token >= 0 && token < vocab, "token %d outside [0, %lld)", token,
             static_cast<long long>(vocab));
  FUZZ_CHECK(!std::isnan(l[token]), "picked a NaN logit");
  if (p.temperature <= 0 || l[best] == -inf) {
    FUZZ_CHECK(token == best, "greedy picked %d, the argmax is %lld", token,
               static_cast<long long>(best));
    return;
  }
  if (l[best] > -inf)
    FUZZ_CHECK(l[token] > -inf, "picked -inf while %g was available",
               l[best]);
  if (l[best] == inf)
    FUZZ_CHECK(l[token] == inf, "picked %g while +inf was available",
               l[token]);
  // top-k: fewer than k tokens rank before the one picked.
  if (p.top_k > 0) {
    int64_t before = 0;
    for (int64_t i = 0; i < vocab; ++i)
      before += ranksBefore(l, i, token);
    FUZZ_CHECK(before < p.top_k, "top-k %d picked a token of rank %lld",
               p.top_k, static_cast<long long>(before));
  }
  // A vanishing temperature is greedy when the best logit leads clearly:
  // any other token has probability below exp(-1 / 1e-30).
  if (p.temperature < 1e-30f && std::isfinite(l[best])) {
    bool clear = true;
    for (int64_t i = 0; i < vocab; ++i)
      if (i != best && !std::isnan(l[i]) &&
          static_cast<double>(l[best]) - static_cast<double>(l[i]) <= 1.0)
        clear = false;
    if (clear)
      FUZZ_CHECK(token == best,
                 "temperature %g picked %d (logit %g), the argmax %lld "
                 "leads by > 1 (logit %g)",
                 p.temperature, token, l[token], static_cast<long long>(best),
                 l[best]);
  }
}

struct Harness {
  Harness() {
    char error[256] = "";
    session = attnrt_session_create(model(), error, sizeof(error));
    replay = attnrt_session_create(model(), error, sizeof(error));
    FUZZ_CHECK(session && replay, "sessions: %s", error);
    vocab = attnrt_model_vocab_size(model());
    maxSeq = attnrt_model_max_seq(model());
  }
  ~Harness() {
    attnrt_session_free(session);
    attnrt_session_free(replay);
    attnrt_sampler_free(sampler);
  }

  /// The last logits row of the whole transcript, recomputed from scratch.
  void checkAgainstReplay(const float *lastRow) {
    attnrt_session_reset(replay);
    std::vector<float> row(static_cast<size_t>(vocab));
    char error[256] = "";
    FUZZ_CHECK(attnrt_prefill(replay, transcript.data(),
                              static_cast<int64_t>(transcript.size()),
                              row.data(), 0, error, sizeof(error)) == ATTNRT_OK,
               "replay: %s", error);
    FUZZ_CHECK(std::memcmp(row.data(), lastRow, 4 * row.size()) == 0,
               "logits differ from a replay of the %zu tokens",
               transcript.size());
  }

  void expectPosition() {
    FUZZ_CHECK(attnrt_session_position(session) ==
                   static_cast<int64_t>(transcript.size()),
               "position %lld, expected %zu",
               static_cast<long long>(attnrt_session_position(session)),
               transcript.size());
  }

  void prefill(ByteReader &in) {
    int64_t n = countFrom(in, -2, 30);
    bool all = in.byte() & 1;
    int64_t count = n >= 1 && n <= 64 ? n : 1;
    std::vector<int32_t> tokens(static_cast<size_t>(count));
    for (int32_t &t : tokens)
      t = tokenFrom(in);
    int64_t pos = static_cast<int64_t>(transcript.size());
    int expected = ATTNRT_OK;
    // n > count only for n > 64 > max_seq: rejected before tokens are read.
    if (n < 1)
      expected = ATTNRT_ERROR_ARGUMENT;
    else if (n > maxSeq - pos)
      expected = ATTNRT_ERROR_POSITION;
    else
      for (int64_t i = 0; i < n && expected == ATTNRT_OK; ++i)
        if (tokens[i] < 0 || tokens[i] >= vocab)
          expected = ATTNRT_ERROR_TOKEN;
    std::vector<float> logits(static_cast<size_t>((all ? count : 1) * vocab));
    char error[256] = "";
    int rc = attnrt_prefill(session, tokens.data(), n, logits.data(), all,
                            error, sizeof(error));
    FUZZ_CHECK(rc == expected, "prefill of %lld at %lld: %d, expected %d (%s)",
               static_cast<long long>(n), static_cast<long long>(pos), rc,
               expected, error);
    if (rc != ATTNRT_OK) {
      FUZZ_CHECK(oneLine(error), "prefill message");
      expectPosition();
      return;
    }
    transcript.insert(transcript.end(), tokens.begin(), tokens.begin() + n);
    expectPosition();
    checkAgainstReplay(logits.data() + (all ? (n - 1) * vocab : 0));
  }

  void decode(ByteReader &in) {
    int32_t token = tokenFrom(in);
    int64_t pos = static_cast<int64_t>(transcript.size());
    int expected = pos >= maxSeq                     ? ATTNRT_ERROR_POSITION
                   : token < 0 || token >= vocab ? ATTNRT_ERROR_TOKEN
                                                 : ATTNRT_OK;
    std::vector<float> logits(static_cast<size_t>(vocab));
    char error[256] = "";
    int rc = attnrt_decode(session, token, logits.data(), error, sizeof(error));
    FUZZ_CHECK(rc == expected, "decode of %d at %lld: %d, expected %d (%s)",
               token, static_cast<long long>(pos), rc, expected, error);
    if (rc != ATTNRT_OK) {
      FUZZ_CHECK(oneLine(error), "decode message");
      expectPosition();
      return;
    }
    transcript.push_back(token);
    expectPosition();
    checkAgainstReplay(logits.data());
  }

  void newSampler(ByteReader &in) {
    attnrt_sampler_params p;
    p.temperature = floatFrom(in);
    uint8_t k = in.byte();
    p.top_k = k == 0xFF ? in.value<int32_t>() : static_cast<int32_t>(k % 48) - 2;
    p.top_p = floatFrom(in);
    p.seed = in.value<uint64_t>();
    int64_t maxVocab = countFrom(in, -1, 80);
    if (maxVocab > 4096)
      return; // A legitimate, large allocation: not what this target tests.
    bool valid = p.temperature >= 0 && p.top_k >= 0 && p.top_p > 0 &&
                 p.top_p <= 1 && maxVocab >= 1;
    char error[256] = "";
    attnrt_sampler *created =
        attnrt_sampler_create(&p, maxVocab, error, sizeof(error));
    FUZZ_CHECK((created != nullptr) == valid,
               "sampler T=%g k=%d p=%g vocab=%lld: %s", p.temperature,
               p.top_k, p.top_p, static_cast<long long>(maxVocab),
               created ? "created" : error);
    if (!created) {
      FUZZ_CHECK(oneLine(error), "sampler message");
      return;
    }
    attnrt_sampler_free(sampler);
    sampler = created;
    params = p;
    samplerVocab = maxVocab;
  }

  void sample(ByteReader &in) {
    int64_t n = countFrom(in, -1, 90);
    if (n > 4096)
      n = 4096;
    std::vector<float> logits(static_cast<size_t>(n > 0 ? n : 0));
    for (float &l : logits)
      l = floatFrom(in);
    int32_t token = attnrt_sample(sampler, logits.data(), n);
    if (!sampler || n < 1 || n > samplerVocab) {
      FUZZ_CHECK(token == -1, "sample accepted vocab %lld (sampler %lld)",
                 static_cast<long long>(n),
                 static_cast<long long>(samplerVocab));
      return;
    }
    checkSample(params, logits, token);
  }

  void generate(ByteReader &in) {
    int64_t n = countFrom(in, -1, 30);
    int64_t g = countFrom(in, -1, 30);
    // As for prefill, a prompt longer than 64 is rejected unread.
    int64_t count = n >= 1 && n <= 64 ? n : 1;
    std::vector<int32_t> prompt(static_cast<size_t>(count));
    for (int32_t &t : prompt)
      t = tokenFrom(in);
    int64_t pos = static_cast<int64_t>(transcript.size());
    int expected = ATTNRT_OK;
    if (!sampler || n < 1 || g < 0 || samplerVocab < vocab)
      expected = ATTNRT_ERROR_ARGUMENT;
    else if (n > maxSeq - pos || g > maxSeq - pos - n)
      expected = ATTNRT_ERROR_POSITION;
    else
      for (int64_t i = 0; i < n && expected == ATTNRT_OK; ++i)
        if (prompt[i] < 0 || prompt[i] >= vocab)
          expected = ATTNRT_ERROR_TOKEN;
    if (expected == ATTNRT_OK && g > 64)
      return;
    std::vector<int32_t> out(static_cast<size_t>(g >= 1 && g <= 64 ? g : 1),
                             -7);
    char error[256] = "";
    int rc = attnrt_generate(session, sampler, prompt.data(), n, out.data(), g,
                             error, sizeof(error));
    FUZZ_CHECK(rc == expected,
               "generate %lld + %lld at %lld: %d, expected %d (%s)",
               static_cast<long long>(n), static_cast<long long>(g),
               static_cast<long long>(pos), rc, expected, error);
    if (rc != ATTNRT_OK) {
      FUZZ_CHECK(oneLine(error), "generate message");
      expectPosition();
      return;
    }
    transcript.insert(transcript.end(), prompt.begin(), prompt.begin() + n);
    for (int64_t i = 0; i < g; ++i) {
      FUZZ_CHECK(out[i] >= 0 && out[i] < vocab, "generated %d", out[i]);
      transcript.push_back(out[i]);
    }
    expectPosition();
  }

  void nullArguments() {
    char error[128] = "";
    int32_t token = 1;
    float row[40];
    int64_t before = attnrt_session_position(session);
    FUZZ_CHECK(attnrt_prefill(nullptr, &token, 1, row, 0, error,
                              sizeof(error)) == ATTNRT_ERROR_ARGUMENT &&
                   attnrt_prefill(session, nullptr, 1, row, 0, error,
                                  sizeof(error)) == ATTNRT_ERROR_ARGUMENT &&
                   attnrt_prefill(session, &token, 1, nullptr, 0, nullptr,
                                  0) == ATTNRT_ERROR_ARGUMENT &&
                   attnrt_decode(session, 1, nullptr, error, 1) ==
                       ATTNRT_ERROR_ARGUMENT &&
                   attnrt_generate(session, nullptr, &token, 1, &token, 1,
                                   error, sizeof(error)) ==
                       ATTNRT_ERROR_ARGUMENT &&
                   attnrt_sample(sampler, nullptr, 1) == -1,
               "a null argument was accepted");
    FUZZ_CHECK(attnrt_session_position(session) == before, "position moved");
  }

  attnrt_session *session = nullptr, *replay = nullptr;
  attnrt_sampler *sampler = nullptr;
  attnrt_sampler_params params = {};
  int64_t samplerVocab = 0;
  int64_t vocab = 0, maxSeq = 0;
  std::vector<int32_t> transcript;
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  ByteReader in(data, size);
  Harness h;
  for (int steps = 0; !in.empty() && steps < 64; ++steps) {
    switch (in.byte() % 8) {
    case 0:
      h.prefill(in);
      break;
    case 1:
      h.decode(in);
      break;
    case 2:
      attnrt_session_reset(h.session);
      h.transcript.clear();
      break;
    case 3:
      h.newSampler(in);
      break;
    case 4:
      h.sample(in);
      break;
    case 5:
      h.generate(in);
      break;
    case 6: {
      // A fresh session replaces the old one.
      attnrt_session_free(h.session);
      char error[128] = "";
      h.session = attnrt_session_create(model(), error, sizeof(error));
      FUZZ_CHECK(h.session, "session: %s", error);
      h.transcript.clear();
      break;
    }
    case 7:
      h.nullArguments();
      break;
    }
  }
  return 0;
}
