//===- Scheduler.h - continuous batching of generation requests -*- C++ -*-===//
//
// One scheduler thread owns the model and its slots (one session each,
// created once). HTTP handler threads submit jobs (a tokenized prompt, a
// sampler, a detokenizer) and read their events from a per-request channel;
// they never touch the model. Each step of the scheduler:
//
//   1. admits queued jobs into free slots and frees the slots of cancelled
//      ones (a client that went away);
//   2. prefills prompts, at most `prefillChunk` tokens over all slots, oldest
//      first, so a long prompt is spread over several steps and the others
//      keep decoding meanwhile;
//   3. decodes every slot that has a token to feed in ONE batched call
//      (BatchedModel::decode, attnrt_decode_batch), samples each row and
//      posts the new text.
//
// A job leaves at the step that finishes it (end of sequence, a stop
// sequence, max_tokens, the context) without waiting for the others. More
// jobs than slots wait in a bounded queue; past it, submit refuses (503).
//
// The model is reached through BatchedModel and a job's text through
// TokenText, so the unit tests run the scheduler on a fake model.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_SERVE_SCHEDULER_H
#define ATTN_SERVE_SCHEDULER_H

#include "attnrt/attnrt.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace attn::serve {

/// The model as the scheduler drives it: numSlots() sessions of one model,
/// used only from the scheduler's thread.
class BatchedModel {
public:
  virtual ~BatchedModel() = default;
  virtual int64_t vocabSize() const = 0;
  /// Positions per session.
  virtual int64_t contextSize() const = 0;
  virtual int numSlots() const = 0;
  /// Restarts a slot's session at position 0.
  virtual void reset(int slot) = 0;
  /// Runs tokens[0, n) at the slot's position; `logits` receives the last
  /// token's row (vocabSize() floats).
  virtual bool prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
                       std::string &error) = 0;
  /// One decode step of slots[0, n) together: slot slots[i] runs tokens[i];
  /// `logits` receives n rows.
  virtual bool decode(const int *slots, const int32_t *tokens, int64_t n, float *logits,
                      std::string &error) = 0;
};

/// A job's generated text, a token at a time.
class TokenText {
public:
  virtual ~TokenText() = default;
  /// Whether `token` ends the sequence (it has no text).
  virtual bool isEnd(int32_t token) const = 0;
  /// Appends the text `token` adds to `text` (possibly nothing: a character
  /// split over byte tokens comes whole with its last byte).
  virtual bool step(int32_t token, std::string &text, std::string &error) = 0;
  /// Appends what is still held back at the end of the stream.
  virtual bool flush(std::string &text, std::string &error) = 0;
};

/// Cuts generated text at the first stop sequence. Text that could be the
/// beginning of one is held back until it is known not to be, so a stop
/// sequence never reaches a stream.
class StopText {
public:
  explicit StopText(std::vector<std::string> stops = {});
  /// Adds `piece` and appends the text now known to come before any stop
  /// sequence to `out`. True when a stop sequence completed: the text ends
  /// before it and nothing more is taken.
  bool add(std::string_view piece, std::string &out);
  /// At the end of the stream: appends what was held back.
  void finish(std::string &out);

private:
  std::vector<std::string> stops;
  size_t longest = 0;
  std::string held;
};

struct SamplerDeleter {
  void operator()(attnrt_sampler *s) const { attnrt_sampler_free(s); }
};
using SamplerHandle = std::unique_ptr<attnrt_sampler, SamplerDeleter>;

/// What a handler submits: the prompt as tokens and everything that turns
/// logits into text. The caller has checked that prompt and maxTokens fit
/// the context.
struct Job {
  std::vector<int32_t> prompt;
  int64_t maxTokens = 1;
  std::vector<std::string> stop;
  SamplerHandle sampler;
  std::unique_ptr<TokenText> text;
};

/// What a job's reader receives, in order: Text events, then one Done or
/// one Error.
struct Event {
  enum class Kind { Text, Done, Error };
  Kind kind = Kind::Text;
  std::string text;                               /// Text: new text; Error: the message
  std::string finishReason;                       /// Done: "stop" or "length"
  int64_t promptTokens = 0, completionTokens = 0; /// Done
  int status = 500;                               /// Error: the HTTP status it stands for
};

/// A job's events, from the scheduler thread to the reader's, and the
/// reader's cancellation back.
class Channel {
public:
  void push(Event event);
  /// Moves the waiting events to `out`, waiting up to `timeout` while there
  /// are none; false when none came.
  bool pop(std::vector<Event> &out, std::chrono::milliseconds timeout);
  void cancel() { cancelled.store(true, std::memory_order_relaxed); }
  bool isCancelled() const { return cancelled.load(std::memory_order_relaxed); }

private:
  std::mutex mutex;
  std::condition_variable ready;
  std::deque<Event> events;
  std::atomic<bool> cancelled{false};
};

/// The reader's end of a submitted job. Destroying it cancels the job: the
/// scheduler frees its slot (or drops it from the queue) at its next step.
class Ticket {
public:
  explicit Ticket(std::shared_ptr<Channel> channel) : channel(std::move(channel)) {}
  ~Ticket() { channel->cancel(); }
  Ticket(const Ticket &) = delete;
  Ticket &operator=(const Ticket &) = delete;
  bool next(std::vector<Event> &out, std::chrono::milliseconds timeout) {
    return channel->pop(out, timeout);
  }

private:
  std::shared_ptr<Channel> channel;
};

struct SchedulerOptions {
  /// Prompt tokens prefilled per step, over all slots.
  int64_t prefillChunk = 64;
  /// Jobs that may wait for a slot; more are refused.
  size_t maxQueue = 64;
};

/// Counters since start, for /metrics and the benchmark.
struct SchedulerStats {
  int64_t admitted = 0, finished = 0, cancelled = 0, failed = 0, rejected = 0;
  int64_t promptTokens = 0, prefillCalls = 0;
  double prefillSeconds = 0;
  /// Tokens sampled (the first of each job comes from its prefill).
  int64_t generatedTokens = 0;
  /// Batched decode calls, the sessions they ran, and their time.
  int64_t decodeSteps = 0, decodeTokens = 0;
  double decodeSeconds = 0;
  int busySlots = 0;
  int64_t queued = 0;
};

class Scheduler {
public:
  Scheduler(BatchedModel &model, SchedulerOptions options);
  /// Shuts down (no grace) if still running.
  ~Scheduler();
  Scheduler(const Scheduler &) = delete;
  Scheduler &operator=(const Scheduler &) = delete;

  /// Starts the scheduler thread.
  void start();
  /// Queues `job`: its ticket, or null with `error` when the queue is full
  /// or the server is shutting down (both 503).
  std::unique_ptr<Ticket> submit(Job job, std::string &error);
  /// Takes no more jobs, fails the queued ones (503), lets the running ones
  /// finish for up to `grace`, fails the rest, and joins the thread.
  void shutdown(std::chrono::milliseconds grace);
  SchedulerStats stats() const;

  /// One step on the calling thread, for tests that drive the scheduler
  /// without start(); false when there was nothing to do.
  bool step();

private:
  struct Slot {
    bool active = false;
    std::shared_ptr<Channel> channel;
    Job job;
    StopText stops;
    uint64_t order = 0; /// admission order: older prompts prefill first
    int64_t prefilled = 0;
    int64_t generated = 0;
    int32_t pending = -1; /// sampled, to be fed by the next decode
  };
  struct Queued {
    std::shared_ptr<Channel> channel;
    Job job;
  };

  void run();
  void admit();
  void prefillStep();
  void decodeStep();
  /// Takes a sampled token: posts its text and finishes the job when it ends.
  void accept(Slot &slot, int32_t token);
  void finish(Slot &slot, const char *reason, bool flushText);
  void fail(Slot &slot, const std::string &message, int status);
  void release(Slot &slot);

  BatchedModel &model;
  const SchedulerOptions options;
  const int64_t vocab, context;
  std::vector<Slot> slots;
  std::vector<float> prefillLogits, decodeLogits;
  std::vector<int> batchSlots;
  std::vector<int32_t> batchTokens;
  uint64_t nextOrder = 0;
  int busy = 0;

  /// Guards the queue, the stop request and the counters.
  mutable std::mutex mutex;
  std::condition_variable wake;
  std::deque<Queued> queue;
  bool stopping = false;
  std::chrono::steady_clock::time_point deadline;
  SchedulerStats counters;
  std::thread thread;
};

} // namespace attn::serve

#endif // ATTN_SERVE_SCHEDULER_H
