//===- GroupModel.cpp - attn-serve over a tensor-parallel group -----------===//

#include "GroupModel.h"

#include <string>
#include <tuple>
#include <vector>

namespace attn::serve {

namespace {

/// What rank 0 asks: {op, slot, n}, then the payload of the op (n token
/// ids; for Decode the n slots first).
enum Op : int64_t { Stop, Heartbeat, Reset, Prefill, Decode };
constexpr auto kHeartbeat = std::chrono::seconds(1);

} // namespace

LeaderModel::LeaderModel(BatchedModel &inner, tools::ProcessGroup &group)
    : inner(inner), group(group), lastSent(std::chrono::steady_clock::now()) {
  heartbeat = std::thread([this] { beat(); });
}

LeaderModel::~LeaderModel() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
    send(Stop, 0, 0);
  }
  wake.notify_all();
  heartbeat.join();
}

void LeaderModel::beat() {
  std::unique_lock<std::mutex> lock(mutex);
  while (!stopping) {
    if (std::chrono::steady_clock::now() - lastSent >= kHeartbeat)
      send(Heartbeat, 0, 0);
    wake.wait_for(lock, kHeartbeat);
  }
}

void LeaderModel::send(int64_t op, int64_t slot, int64_t n, const int32_t *first,
                       const int32_t *second) {
  int64_t header[3] = {op, slot, n};
  group.broadcast(header, sizeof header);
  for (const int32_t *part : {first, second})
    if (part)
      group.broadcast(const_cast<int32_t *>(part), n * static_cast<int64_t>(sizeof(int32_t)));
  lastSent = std::chrono::steady_clock::now();
}

void LeaderModel::reset(int slot) {
  std::lock_guard<std::mutex> lock(mutex);
  send(Reset, slot, 0);
  inner.reset(slot);
}

bool LeaderModel::prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
                          std::string &error) {
  std::lock_guard<std::mutex> lock(mutex);
  send(Prefill, slot, n, tokens);
  return inner.prefill(slot, tokens, n, logits, error);
}

bool LeaderModel::decode(const int *slots, const int32_t *tokens, int64_t n, float *logits,
                         std::string &error) {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<int32_t> slotIds(slots, slots + n);
  send(Decode, 0, n, slotIds.data(), tokens);
  return inner.decode(slots, tokens, n, logits, error);
}

void followLeader(BatchedModel &model, tools::ProcessGroup &group) {
  std::vector<int32_t> first, second;
  std::vector<int> slots;
  std::vector<float> logits;
  std::string error;
  for (;;) {
    int64_t header[3] = {0, 0, 0};
    group.broadcast(header, sizeof header);
    auto [op, slot, n] = std::tuple{header[0], header[1], header[2]};
    if (op == Stop)
      return;
    if (op == Heartbeat)
      continue;
    if (op == Reset) {
      model.reset(static_cast<int>(slot));
      continue;
    }
    if ((op != Prefill && op != Decode) || n < 1 || slot < 0 || slot >= model.numSlots())
      group.abort("attn-serve: a command from rank 0 that this rank cannot run (op " +
                  std::to_string(op) + ", slot " + std::to_string(slot) + ", " +
                  std::to_string(n) + " tokens)");
    int64_t parts = op == Decode ? 2 : 1;
    first.resize(static_cast<size_t>(n));
    second.resize(static_cast<size_t>(n));
    group.broadcast(first.data(), n * static_cast<int64_t>(sizeof(int32_t)));
    if (parts == 2)
      group.broadcast(second.data(), n * static_cast<int64_t>(sizeof(int32_t)));
    logits.resize(static_cast<size_t>((op == Decode ? n : 1) * model.vocabSize()));
    // The same call fails alike on every rank (the runtime checks its
    // arguments before any collective); rank 0 reports it to its client.
    if (op == Prefill) {
      model.prefill(static_cast<int>(slot), first.data(), n, logits.data(), error);
    } else {
      slots.assign(first.begin(), first.end());
      model.decode(slots.data(), second.data(), n, logits.data(), error);
    }
  }
}

} // namespace attn::serve
