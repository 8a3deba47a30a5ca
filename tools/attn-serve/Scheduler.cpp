//===- Scheduler.cpp - continuous batching of generation requests ---------===//

#include "Scheduler.h"

#include <algorithm>

namespace attn::serve {

using Clock = std::chrono::steady_clock;

//===------------------------------ StopText -----------------------------===//

StopText::StopText(std::vector<std::string> stopSequences) : stops(std::move(stopSequences)) {
  for (const std::string &stop : stops)
    longest = std::max(longest, stop.size());
}

bool StopText::add(std::string_view piece, std::string &out) {
  if (stops.empty()) {
    out.append(piece);
    return false;
  }
  held.append(piece);
  // Whatever came before `held` holds no beginning of a stop sequence, so
  // the first one, if any, lies in `held`.
  size_t first = std::string::npos;
  for (const std::string &stop : stops)
    first = std::min(first, held.find(stop));
  if (first != std::string::npos) {
    out.append(held, 0, first);
    held.clear();
    return true;
  }
  // Hold back the longest end of the text that begins some stop sequence.
  size_t keep = 0;
  for (size_t k = std::min(held.size(), longest - 1); k > 0 && !keep; --k) {
    std::string_view tail = std::string_view(held).substr(held.size() - k);
    for (const std::string &stop : stops)
      if (stop.size() > k && stop.compare(0, k, tail) == 0) {
        keep = k;
        break;
      }
  }
  out.append(held, 0, held.size() - keep);
  held.erase(0, held.size() - keep);
  return false;
}

void StopText::finish(std::string &out) {
  out += held;
  held.clear();
}

//===------------------------------ Channel ------------------------------===//

void Channel::push(Event event) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    events.push_back(std::move(event));
  }
  ready.notify_one();
}

bool Channel::pop(std::vector<Event> &out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  if (!ready.wait_for(lock, timeout, [&] { return !events.empty(); }))
    return false;
  for (Event &event : events)
    out.push_back(std::move(event));
  events.clear();
  return true;
}

//===----------------------------- Scheduler -----------------------------===//

Scheduler::Scheduler(BatchedModel &model, SchedulerOptions options)
    : model(model), options(options), vocab(model.vocabSize()), context(model.contextSize()),
      slots(static_cast<size_t>(model.numSlots())) {
  // Every buffer of a step exists before the first one.
  size_t n = slots.size();
  prefillLogits.resize(static_cast<size_t>(vocab));
  decodeLogits.resize(n * static_cast<size_t>(vocab));
  batchSlots.reserve(n);
  batchTokens.reserve(n);
}

Scheduler::~Scheduler() {
  if (thread.joinable())
    shutdown(std::chrono::milliseconds(0));
}

void Scheduler::start() {
  thread = std::thread([this] { run(); });
}

std::unique_ptr<Ticket> Scheduler::submit(Job job, std::string &error) {
  auto channel = std::make_shared<Channel>();
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (stopping) {
      error = "the server is shutting down";
      ++counters.rejected;
      return nullptr;
    }
    // Jobs whose readers left while they waited hold no place in the queue.
    size_t before = queue.size();
    queue.erase(std::remove_if(queue.begin(), queue.end(),
                               [](const Queued &q) { return q.channel->isCancelled(); }),
                queue.end());
    counters.cancelled += static_cast<int64_t>(before - queue.size());
    // Jobs that will take a free slot at the next step do not wait.
    size_t free = slots.size() - static_cast<size_t>(counters.busySlots);
    if (queue.size() >= options.maxQueue + free) {
      error = "the server is busy: " + std::to_string(slots.size()) + " requests running and " +
              std::to_string(queue.size()) + " waiting (--parallel, --queue); retry later";
      ++counters.rejected;
      return nullptr;
    }
    queue.push_back({channel, std::move(job)});
    counters.queued = static_cast<int64_t>(queue.size());
  }
  wake.notify_one();
  return std::make_unique<Ticket>(std::move(channel));
}

void Scheduler::shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!stopping) {
      stopping = true;
      deadline = Clock::now() + grace;
    }
  }
  wake.notify_one();
  if (thread.joinable())
    thread.join();
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mutex);
  return counters;
}

void Scheduler::run() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || !queue.empty() || busy > 0; });
      if (stopping) {
        for (Queued &queued : queue) {
          Event event;
          event.kind = Event::Kind::Error;
          event.text = "the server is shutting down";
          event.status = 503;
          queued.channel->push(std::move(event));
        }
        counters.failed += static_cast<int64_t>(queue.size());
        queue.clear();
        counters.queued = 0;
        if (busy == 0)
          return;
        if (Clock::now() >= deadline) {
          lock.unlock();
          for (Slot &slot : slots)
            if (slot.active)
              fail(slot, "the server is shutting down", 503);
          return;
        }
      }
    }
    step();
  }
}

bool Scheduler::step() {
  // Slots of readers that left are freed first, for the queue to take now.
  for (Slot &slot : slots)
    if (slot.active && slot.channel->isCancelled()) {
      release(slot);
      std::lock_guard<std::mutex> lock(mutex);
      ++counters.cancelled;
    }
  admit();
  if (busy == 0)
    return false;
  prefillStep();
  decodeStep();
  return true;
}

void Scheduler::admit() {
  std::lock_guard<std::mutex> lock(mutex);
  for (Slot &slot : slots) {
    if (slot.active)
      continue;
    // Jobs whose reader left while they waited are dropped here.
    while (!queue.empty() && queue.front().channel->isCancelled()) {
      queue.pop_front();
      ++counters.cancelled;
    }
    if (queue.empty())
      break;
    Queued &queued = queue.front();
    int index = static_cast<int>(&slot - slots.data());
    model.reset(index);
    slot.active = true;
    slot.channel = std::move(queued.channel);
    slot.job = std::move(queued.job);
    slot.stops = StopText(slot.job.stop);
    slot.order = nextOrder++;
    slot.prefilled = 0;
    slot.generated = 0;
    slot.pending = -1;
    queue.pop_front();
    ++busy;
    ++counters.admitted;
    counters.promptTokens += static_cast<int64_t>(slot.job.prompt.size());
  }
  counters.queued = static_cast<int64_t>(queue.size());
  counters.busySlots = busy;
}

void Scheduler::prefillStep() {
  std::vector<Slot *> waiting;
  for (Slot &slot : slots)
    if (slot.active && slot.prefilled < static_cast<int64_t>(slot.job.prompt.size()))
      waiting.push_back(&slot);
  std::sort(waiting.begin(), waiting.end(),
            [](const Slot *a, const Slot *b) { return a->order < b->order; });
  int64_t budget = std::max<int64_t>(options.prefillChunk, 1);
  for (Slot *slot : waiting) {
    if (budget == 0)
      break;
    int64_t promptLength = static_cast<int64_t>(slot->job.prompt.size());
    int64_t n = std::min(budget, promptLength - slot->prefilled);
    budget -= n;
    std::string error;
    auto start = Clock::now();
    bool ok =
        model.prefill(static_cast<int>(slot - slots.data()),
                      slot->job.prompt.data() + slot->prefilled, n, prefillLogits.data(), error);
    double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    {
      std::lock_guard<std::mutex> lock(mutex);
      ++counters.prefillCalls;
      counters.prefillSeconds += seconds;
    }
    if (!ok) {
      fail(*slot, error, 500);
      continue;
    }
    slot->prefilled += n;
    if (slot->prefilled < promptLength)
      continue;
    // The prompt's last row gives the first token.
    int32_t token = attnrt_sample(slot->job.sampler.get(), prefillLogits.data(), vocab);
    if (token < 0) {
      fail(*slot, "every logit is NaN: nothing to sample", 500);
      continue;
    }
    accept(*slot, token);
  }
}

void Scheduler::decodeStep() {
  batchSlots.clear();
  batchTokens.clear();
  for (Slot &slot : slots)
    if (slot.active && slot.pending >= 0) {
      batchSlots.push_back(static_cast<int>(&slot - slots.data()));
      batchTokens.push_back(slot.pending);
    }
  if (batchSlots.empty())
    return;
  int64_t n = static_cast<int64_t>(batchSlots.size());
  std::string error;
  auto start = Clock::now();
  bool ok = model.decode(batchSlots.data(), batchTokens.data(), n, decodeLogits.data(), error);
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.decodeSteps;
    counters.decodeTokens += n;
    counters.decodeSeconds += seconds;
  }
  for (int64_t i = 0; i < n; ++i) {
    Slot &slot = slots[static_cast<size_t>(batchSlots[static_cast<size_t>(i)])];
    slot.pending = -1;
    if (!ok) {
      fail(slot, error, 500);
      continue;
    }
    int32_t token = attnrt_sample(slot.job.sampler.get(), decodeLogits.data() + i * vocab, vocab);
    if (token < 0) {
      fail(slot, "every logit is NaN: nothing to sample", 500);
      continue;
    }
    accept(slot, token);
  }
}

void Scheduler::accept(Slot &slot, int32_t token) {
  ++slot.generated;
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.generatedTokens;
  }
  // The end of sequence has no text and is not fed back.
  if (slot.job.text->isEnd(token))
    return finish(slot, "stop", true);
  std::string piece, error;
  if (!slot.job.text->step(token, piece, error))
    return fail(slot, error, 500);
  Event event;
  bool stopped = slot.stops.add(piece, event.text);
  if (!event.text.empty())
    slot.channel->push(std::move(event));
  if (stopped)
    return finish(slot, "stop", false);
  // The last token of a job is not fed back; the checks at submission keep
  // prompt + maxTokens within the context, the second test is a guard.
  int64_t position = static_cast<int64_t>(slot.job.prompt.size()) + slot.generated - 1;
  if (slot.generated >= slot.job.maxTokens || position >= context)
    return finish(slot, "length", true);
  slot.pending = token;
}

void Scheduler::finish(Slot &slot, const char *reason, bool flushText) {
  Event text;
  std::string rest, error;
  if (flushText) {
    if (!slot.job.text->flush(rest, error))
      return fail(slot, error, 500);
    if (slot.stops.add(rest, text.text))
      reason = "stop";
    else
      slot.stops.finish(text.text);
  }
  Event done;
  done.kind = Event::Kind::Done;
  done.finishReason = reason;
  done.promptTokens = static_cast<int64_t>(slot.job.prompt.size());
  done.completionTokens = slot.generated;
  // The counters are right before the reader can see the end.
  std::shared_ptr<Channel> channel = slot.channel;
  release(slot);
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.finished;
  }
  if (!text.text.empty())
    channel->push(std::move(text));
  channel->push(std::move(done));
}

void Scheduler::fail(Slot &slot, const std::string &message, int status) {
  Event event;
  event.kind = Event::Kind::Error;
  event.text = message;
  event.status = status;
  std::shared_ptr<Channel> channel = slot.channel;
  release(slot);
  {
    std::lock_guard<std::mutex> lock(mutex);
    ++counters.failed;
  }
  channel->push(std::move(event));
}

void Scheduler::release(Slot &slot) {
  slot.active = false;
  slot.channel.reset();
  // The sampler and the detokenizer go now, not at the slot's next job.
  slot.job = Job();
  slot.pending = -1;
  --busy;
  std::lock_guard<std::mutex> lock(mutex);
  counters.busySlots = busy;
}

} // namespace attn::serve
