//===- GroupModel.h - attn-serve over a tensor-parallel group ---*- C++ -*-===//
//
// Under `mpirun -np N attn-serve MODEL_DIR`, rank 0 serves HTTP and the
// other ranks hold the rest of the model. Every call rank 0's scheduler makes
// (reset a slot, prefill a chunk, one batched decode step) is first
// broadcast as a command, and followLeader runs it on each other rank's own
// sessions, so that every rank makes the same compiled calls, and so the same
// collectives, in the same order. Sampling stays on rank 0: the other ranks
// only need the tokens it chose, which the next command carries.
//
// While rank 0 is idle a heartbeat command every second keeps the others
// inside their collective deadline (ATTN_TP_TIMEOUT); a rank that stops
// answering still ends the job through that deadline.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_GROUPMODEL_H
#define ATTN_SERVE_GROUPMODEL_H

#include "ProcessGroup.h"
#include "Scheduler.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace attn::serve {

/// Rank 0's model: `inner` (its own sessions), each call sent to the group.
class LeaderModel : public BatchedModel {
public:
  LeaderModel(BatchedModel &inner, tools::ProcessGroup &group);
  /// Tells the other ranks to stop (their followLeader returns).
  ~LeaderModel() override;

  int64_t vocabSize() const override { return inner.vocabSize(); }
  int64_t contextSize() const override { return inner.contextSize(); }
  int numSlots() const override { return inner.numSlots(); }
  void reset(int slot) override;
  bool prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
               std::string &error) override;
  bool decode(const int *slots, const int32_t *tokens, int64_t n, float *logits,
              std::string &error) override;

private:
  /// Broadcasts a command and its payload; the caller holds `mutex`.
  void send(int64_t op, int64_t slot, int64_t n, const int32_t *first = nullptr,
            const int32_t *second = nullptr);
  void beat();

  BatchedModel &inner;
  tools::ProcessGroup &group;
  /// One call into MPI at a time (the scheduler's and the heartbeat's).
  std::mutex mutex;
  std::condition_variable wake;
  bool stopping = false;
  std::chrono::steady_clock::time_point lastSent;
  std::thread heartbeat;
};

/// A rank other than 0: runs rank 0's commands on `model` (its sessions)
/// until rank 0 says stop. `model` must have rank 0's slot count.
void followLeader(BatchedModel &model, tools::ProcessGroup &group);

} // namespace attn::serve

#endif // ATTN_SERVE_GROUPMODEL_H
