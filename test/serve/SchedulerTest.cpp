//===- SchedulerTest.cpp - attn-serve's batching on a fake model ----------===//
//
// The fake model's next token is always (last token + 1) mod 16 (a one-hot
// logits row, so the real greedy sampler picks it), and it records every
// call: the tests check that decoding slots share one batched call per step,
// that jobs join and leave at step boundaries, that long prompts are
// prefilled in chunks while the others decode, and the stop, cancel, queue
// and shutdown rules. Token t's text is the letter 'a' + t; 15 ends the
// sequence.
//
//===----------------------------------------------------------------------===//

#include "Scheduler.h"

#include <gtest/gtest.h>

#include <thread>

using namespace attn::serve;

namespace {

constexpr int64_t kVocab = 16;
constexpr int32_t kEnd = 15;

class FakeModel : public BatchedModel {
public:
  FakeModel(int slots, int64_t context) : slots(slots), context(context), position(slots, 0) {}

  int64_t vocabSize() const override { return kVocab; }
  int64_t contextSize() const override { return context; }
  int numSlots() const override { return slots; }
  void reset(int slot) override { position[slot] = 0; }
  bool prefill(int slot, const int32_t *tokens, int64_t n, float *logits,
               std::string &error) override {
    prefills.push_back(n);
    if (position[slot] + n > context) {
      error = "context full";
      return false;
    }
    position[slot] += n;
    row(tokens[n - 1], logits);
    return true;
  }
  bool decode(const int *ids, const int32_t *tokens, int64_t n, float *logits,
              std::string &error) override {
    batches.push_back(std::vector<int>(ids, ids + n));
    for (int64_t i = 0; i < n; ++i) {
      if (position[ids[i]] >= context) {
        error = "context full";
        return false;
      }
      ++position[ids[i]];
      row(tokens[i], logits + i * kVocab);
    }
    return true;
  }

  int slots;
  int64_t context;
  std::vector<int64_t> position;
  std::vector<int64_t> prefills;
  std::vector<std::vector<int>> batches;

private:
  static void row(int32_t token, float *logits) {
    for (int64_t v = 0; v < kVocab; ++v)
      logits[v] = 0;
    logits[(token + 1) % kVocab] = 1;
  }
};

class LetterText : public TokenText {
public:
  bool isEnd(int32_t token) const override { return token == kEnd; }
  bool step(int32_t token, std::string &text, std::string &) override {
    text += static_cast<char>('a' + token);
    return true;
  }
  bool flush(std::string &, std::string &) override { return true; }
};

Job makeJob(std::vector<int32_t> prompt, int64_t maxTokens, std::vector<std::string> stop = {}) {
  Job job;
  job.prompt = std::move(prompt);
  job.maxTokens = maxTokens;
  job.stop = std::move(stop);
  attnrt_sampler_params params = attnrt_sampler_default_params();
  job.sampler.reset(attnrt_sampler_create(&params, kVocab, nullptr, 0));
  job.text = std::make_unique<LetterText>();
  return job;
}

/// A job's events once it has ended.
struct Outcome {
  std::string text, finishReason, error;
  int status = 0;
  int64_t promptTokens = -1, completionTokens = -1;
  bool ended = false;
};

/// Takes the events there are now (no waiting).
void drain(Ticket &ticket, Outcome &outcome) {
  std::vector<Event> events;
  ticket.next(events, std::chrono::milliseconds(0));
  for (const Event &event : events) {
    ASSERT_FALSE(outcome.ended) << "an event after the end";
    if (event.kind == Event::Kind::Text) {
      outcome.text += event.text;
    } else if (event.kind == Event::Kind::Done) {
      outcome.ended = true;
      outcome.finishReason = event.finishReason;
      outcome.promptTokens = event.promptTokens;
      outcome.completionTokens = event.completionTokens;
    } else {
      outcome.ended = true;
      outcome.error = event.text;
      outcome.status = event.status;
    }
  }
}

Outcome runAlone(std::vector<int32_t> prompt, int64_t maxTokens,
                 std::vector<std::string> stop = {}) {
  FakeModel model(1, 64);
  Scheduler scheduler(model, {});
  std::string error;
  auto ticket = scheduler.submit(makeJob(std::move(prompt), maxTokens, std::move(stop)), error);
  EXPECT_TRUE(ticket) << error;
  Outcome outcome;
  for (int i = 0; i < 100 && !outcome.ended; ++i) {
    scheduler.step();
    drain(*ticket, outcome);
  }
  EXPECT_TRUE(outcome.ended);
  return outcome;
}

TEST(ServeScheduler, LengthEndAndUsage) {
  Outcome o = runAlone({1, 2, 3}, 5);
  EXPECT_EQ(o.text, "efghi");
  EXPECT_EQ(o.finishReason, "length");
  EXPECT_EQ(o.promptTokens, 3);
  EXPECT_EQ(o.completionTokens, 5);
}

TEST(ServeScheduler, EndOfSequenceStops) {
  Outcome o = runAlone({12}, 10);
  EXPECT_EQ(o.text, "no");
  EXPECT_EQ(o.finishReason, "stop");
  EXPECT_EQ(o.completionTokens, 3);
}

TEST(ServeScheduler, StopSequences) {
  Outcome o = runAlone({3}, 10, {"fg"});
  EXPECT_EQ(o.text, "e");
  EXPECT_EQ(o.finishReason, "stop");
  // A prefix of a stop sequence that does not complete is released.
  o = runAlone({3}, 4, {"fx"});
  EXPECT_EQ(o.text, "efgh");
  EXPECT_EQ(o.finishReason, "length");
  // Held back at the end of the stream: released too.
  o = runAlone({3}, 2, {"fgh"});
  EXPECT_EQ(o.text, "ef");
  EXPECT_EQ(o.finishReason, "length");
}

TEST(ServeScheduler, StopTextHoldsBackPrefixes) {
  StopText stops({"ab", "xyz"});
  std::string out;
  EXPECT_FALSE(stops.add("1x", out));
  EXPECT_EQ(out, "1");
  EXPECT_FALSE(stops.add("y", out));
  EXPECT_EQ(out, "1");
  EXPECT_FALSE(stops.add("a", out));
  EXPECT_EQ(out, "1xy");
  EXPECT_TRUE(stops.add("bc", out));
  EXPECT_EQ(out, "1xy");
  StopText none;
  std::string all;
  EXPECT_FALSE(none.add("ab", all));
  EXPECT_EQ(all, "ab");
  StopText rest({"zz"});
  std::string text;
  EXPECT_FALSE(rest.add("az", text));
  rest.finish(text);
  EXPECT_EQ(text, "az");
}

TEST(ServeScheduler, OneBatchedDecodePerStepJoinAndLeave) {
  FakeModel model(4, 64);
  Scheduler scheduler(model, {});
  std::string error;
  auto a = scheduler.submit(makeJob({0}, 2), error);
  auto b = scheduler.submit(makeJob({4}, 4), error);
  ASSERT_TRUE(a && b);
  // Step 1: both prefill and sample their first token, then decode together.
  scheduler.step();
  ASSERT_EQ(model.batches.size(), 1u);
  EXPECT_EQ(model.batches[0], (std::vector<int>{0, 1}));
  // Step 2: a reaches max_tokens 2 from step 1's decode; c joins now.
  Outcome ao, bo, co;
  drain(*a, ao);
  EXPECT_TRUE(ao.ended);
  EXPECT_EQ(ao.text, "bc");
  auto c = scheduler.submit(makeJob({9}, 3), error);
  scheduler.step();
  ASSERT_EQ(model.batches.size(), 2u);
  EXPECT_EQ(model.batches[1], (std::vector<int>{0, 1})) << "c took a's freed slot 0";
  scheduler.step();
  scheduler.step();
  drain(*b, bo);
  drain(*c, co);
  EXPECT_EQ(bo.text, "fghi");
  EXPECT_EQ(co.text, "klm");
  EXPECT_TRUE(bo.ended && co.ended);
  EXPECT_FALSE(scheduler.step());
  SchedulerStats stats = scheduler.stats();
  EXPECT_EQ(stats.admitted, 3);
  EXPECT_EQ(stats.finished, 3);
  EXPECT_EQ(stats.generatedTokens, 9);
  EXPECT_EQ(stats.busySlots, 0);
}

TEST(ServeScheduler, LongPromptsArePrefilledInChunksBetweenDecodes) {
  FakeModel model(2, 64);
  SchedulerOptions options;
  options.prefillChunk = 4;
  Scheduler scheduler(model, options);
  std::string error;
  auto shortJob = scheduler.submit(makeJob({1}, 10), error);
  scheduler.step(); // the short job prefills and decodes alone
  auto longJob = scheduler.submit(makeJob(std::vector<int32_t>(10, 2), 2), error);
  scheduler.step();
  scheduler.step();
  scheduler.step();
  // The 10-token prompt took three steps (4 + 4 + 2) while the short job
  // decoded in every one of them; it joined the batch at the third.
  EXPECT_EQ(model.prefills, (std::vector<int64_t>{1, 4, 4, 2}));
  ASSERT_EQ(model.batches.size(), 4u);
  EXPECT_EQ(model.batches[1], (std::vector<int>{0}));
  EXPECT_EQ(model.batches[2], (std::vector<int>{0}));
  EXPECT_EQ(model.batches[3], (std::vector<int>{0, 1}));
}

TEST(ServeScheduler, CancelFreesTheSlotAtTheNextStep) {
  FakeModel model(1, 64);
  Scheduler scheduler(model, {});
  std::string error;
  auto gone = scheduler.submit(makeJob({1}, 50), error);
  scheduler.step();
  gone.reset();
  auto next = scheduler.submit(makeJob({5}, 2), error);
  ASSERT_TRUE(next);
  scheduler.step();
  scheduler.step();
  Outcome o;
  drain(*next, o);
  EXPECT_TRUE(o.ended);
  EXPECT_EQ(o.text, "gh");
  EXPECT_EQ(scheduler.stats().cancelled, 1);
  // Cancelled while queued: dropped without running.
  auto first = scheduler.submit(makeJob({1}, 3), error);
  auto queued = scheduler.submit(makeJob({1}, 3), error);
  queued.reset();
  for (int i = 0; i < 5; ++i)
    scheduler.step();
  EXPECT_EQ(scheduler.stats().cancelled, 2);
  EXPECT_EQ(scheduler.stats().admitted, 3);
}

TEST(ServeScheduler, BoundedQueue) {
  FakeModel model(1, 64);
  SchedulerOptions options;
  options.maxQueue = 1;
  Scheduler scheduler(model, options);
  std::string error;
  auto a = scheduler.submit(makeJob({1}, 3), error); // takes the free slot
  auto b = scheduler.submit(makeJob({1}, 3), error); // waits
  auto c = scheduler.submit(makeJob({1}, 3), error); // refused
  EXPECT_TRUE(a && b);
  EXPECT_FALSE(c);
  EXPECT_NE(error.find("busy"), std::string::npos);
  EXPECT_EQ(scheduler.stats().rejected, 1);
}

TEST(ServeScheduler, ContextErrorFailsOnlyThatJob) {
  FakeModel model(2, 4);
  Scheduler scheduler(model, {});
  std::string error;
  // The caller's check was skipped: the model refuses, the job fails (500).
  auto bad = scheduler.submit(makeJob({1, 2, 3, 4, 5}, 1), error);
  auto good = scheduler.submit(makeJob({1}, 2), error);
  for (int i = 0; i < 4; ++i)
    scheduler.step();
  Outcome b, g;
  drain(*bad, b);
  drain(*good, g);
  EXPECT_EQ(b.status, 500);
  EXPECT_EQ(b.error, "context full");
  EXPECT_EQ(g.text, "cd");
}

TEST(ServeScheduler, ThreadedClientsAndShutdown) {
  FakeModel model(3, 256);
  SchedulerOptions options;
  options.maxQueue = 64;
  Scheduler scheduler(model, options);
  scheduler.start();
  constexpr int kClients = 12;
  std::vector<Outcome> outcomes(kClients);
  std::vector<std::thread> clients;
  for (int i = 0; i < kClients; ++i)
    clients.emplace_back([&, i] {
      std::string error;
      auto ticket = scheduler.submit(makeJob({static_cast<int32_t>(i % 4)}, 8), error);
      ASSERT_TRUE(ticket) << error;
      std::vector<Event> events;
      while (!outcomes[i].ended) {
        drain(*ticket, outcomes[i]);
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    });
  for (std::thread &client : clients)
    client.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(outcomes[i].completionTokens, 8) << i;
    EXPECT_EQ(outcomes[i].text.size(), 8u) << i;
  }
  for (const std::vector<int> &batch : model.batches)
    EXPECT_LE(batch.size(), 3u);

  // Shutdown: a job still waiting is failed with 503; a running one gets
  // the grace period (none here).
  std::string error;
  auto running = scheduler.submit(makeJob({1}, 200), error);
  scheduler.shutdown(std::chrono::milliseconds(0));
  Outcome o;
  drain(*running, o);
  EXPECT_TRUE(o.ended);
  if (!o.error.empty())
    EXPECT_EQ(o.status, 503);
  EXPECT_FALSE(scheduler.submit(makeJob({1}, 2), error));
  EXPECT_NE(error.find("shutting down"), std::string::npos);
}

} // namespace
