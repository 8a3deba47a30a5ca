//===- MpiCommunicator.cpp - attnrt_communicator over MPI ----------------===//
//
// The hooks of attnrt_communicator cannot return errors, and a blocking MPI
// collective waits forever for a rank that stopped (OpenMPI's launcher ends
// the job when a rank exits, not when one hangs). So every collective is
// started non-blocking and polled with a deadline; a missed deadline or an
// MPI error ends the whole job with one line saying which collective failed.
//
//===----------------------------------------------------------------------===//

#include "attnrt/mpi.h"

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <new>
#include <sched.h>

// MPI counts are int: larger buffers go in chunks of at most this many
// elements. A test build lowers it to exercise the chunking.
#ifndef ATTNRT_MPI_MAX_COUNT
#define ATTNRT_MPI_MAX_COUNT INT_MAX
#endif

namespace {

constexpr int64_t kMaxCount = ATTNRT_MPI_MAX_COUNT;
constexpr double kDefaultTimeout = 60;
// While waiting: spin this long (a decode step's collective usually completes
// within microseconds), then sched_yield until kYieldSeconds, then sleep,
// doubling from 50 us up to 1 ms, so that ranks sharing a core with this one
// (more ranks than cores) get the CPU they need to arrive.
constexpr double kSpinSeconds = 50e-6;
constexpr double kYieldSeconds = 2e-3;
constexpr long kFirstSleepNs = 50000, kMaxSleepNs = 1000000;

// The state behind attnrt_communicator::context; `pub` is what callers see.
struct Group {
  attnrt_communicator pub;
  MPI_Comm comm;
  double timeout; // seconds, per MPI request
  int32_t local_size;
  bool owns_mpi; // attnrt_mpi_init initialized MPI, so finalize finalizes it
  attnrt_mpi_stats stats;
};

Group *group(const attnrt_communicator *comm) {
  return static_cast<Group *>(comm->context);
}

double now() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void setError(char *error, size_t error_size, const char *format, ...) {
  if (!error || error_size == 0)
    return;
  va_list args;
  va_start(args, format);
  vsnprintf(error, error_size, format, args);
  va_end(args);
}

const char *mpiMessage(int code, char (&buffer)[MPI_MAX_ERROR_STRING]) {
  int length = 0;
  if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS)
    snprintf(buffer, sizeof buffer, "MPI error %d", code);
  return buffer;
}

enum class Wait { Done, TimedOut, Failed };

// Polls *request until it completes, `timeout` seconds pass or MPI fails
// (the code in *code). MPI_Test also drives the progress of non-blocking
// collectives, which is why the poll never stops for long.
Wait waitFor(MPI_Request *request, double timeout, int *code) {
  const double start = now();
  long sleep_ns = kFirstSleepNs;
  for (;;) {
    int done = 0;
    *code = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (*code != MPI_SUCCESS)
      return Wait::Failed;
    if (done)
      return Wait::Done;
    const double waited = now() - start;
    if (waited >= timeout)
      return Wait::TimedOut;
    if (waited < kSpinSeconds)
      continue;
    if (waited < kYieldSeconds) {
      sched_yield();
      continue;
    }
    timespec pause = {0, sleep_ns};
    nanosleep(&pause, nullptr);
    sleep_ns = std::min(sleep_ns * 2, kMaxSleepNs);
  }
}

// What a collective was, for the message that ends the job.
struct Op {
  const char *name;
  int64_t n = -1;        // elements, or -1 for none (a barrier)
  const char *unit = ""; // "floats", "floats per rank", "bytes"
  int32_t root = -1;     // a broadcast's
};

// Waits for the collective that the MPI call returning `started` began, and
// ends the job when it fails or misses the deadline.
void complete(Group *g, int started, MPI_Request *request, const Op &op) {
  int code = started;
  const Wait wait = started != MPI_SUCCESS
                        ? Wait::Failed
                        : waitFor(request, g->timeout, &code);
  if (wait == Wait::Done)
    return;
  char what[128];
  int length = snprintf(what, sizeof what, "%s", op.name);
  if (op.n >= 0)
    length += snprintf(what + length, sizeof what - length, " of %lld %s",
                       static_cast<long long>(op.n), op.unit);
  if (op.root >= 0)
    snprintf(what + length, sizeof what - length, " from rank %d", op.root);
  char message[MPI_MAX_ERROR_STRING + 256], mpi[MPI_MAX_ERROR_STRING];
  if (wait == Wait::TimedOut)
    snprintf(message, sizeof message,
             "%s waited %g s for the other ranks (one died or stopped "
             "responding); aborting the tensor-parallel group",
             what, g->timeout);
  else
    snprintf(message, sizeof message,
             "%s failed: %s; aborting the tensor-parallel group", what,
             mpiMessage(code, mpi));
  attnrt_mpi_abort(&g->pub, message);
}

void account(attnrt_mpi_counter &counter, int64_t bytes, double start) {
  ++counter.calls;
  counter.bytes += bytes;
  counter.seconds += now() - start;
}

int chunk(int64_t n, int64_t offset) {
  return static_cast<int>(std::min(n - offset, kMaxCount));
}

void allReduceSum(void *context, float *data, int64_t n) {
  Group *g = static_cast<Group *>(context);
  const double start = now();
  for (int64_t offset = 0; offset < n; offset += kMaxCount) {
    MPI_Request request;
    const int started =
        MPI_Iallreduce(MPI_IN_PLACE, data + offset, chunk(n, offset),
                       MPI_FLOAT, MPI_SUM, g->comm, &request);
    complete(g, started, &request, {"all-reduce", n, "floats"});
  }
  account(g->stats.all_reduce, n * int64_t(sizeof(float)), start);
}

void allGather(void *context, const float *data, int64_t n, float *out) {
  Group *g = static_cast<Group *>(context);
  const double start = now();
  for (int64_t offset = 0; offset < n; offset += kMaxCount) {
    const int count = chunk(n, offset);
    MPI_Datatype block = MPI_FLOAT;
    int blocks = count;
    int started = MPI_SUCCESS;
    if (count < n) {
      // One chunk of every rank's data: rank r's lands at out + r * n +
      // offset, so the receive type is `count` floats with an extent of n.
      MPI_Datatype contiguous;
      started = MPI_Type_contiguous(count, MPI_FLOAT, &contiguous);
      if (started == MPI_SUCCESS) {
        started = MPI_Type_create_resized(
            contiguous, 0, static_cast<MPI_Aint>(n * sizeof(float)), &block);
        MPI_Type_free(&contiguous);
      }
      if (started == MPI_SUCCESS)
        started = MPI_Type_commit(&block);
      blocks = 1;
    }
    MPI_Request request;
    if (started == MPI_SUCCESS)
      started = MPI_Iallgather(data + offset, count, MPI_FLOAT, out + offset,
                               blocks, block, g->comm, &request);
    // MPI keeps a freed type alive for the operation that uses it.
    if (block != MPI_FLOAT)
      MPI_Type_free(&block);
    complete(g, started, &request, {"all-gather", n, "floats per rank"});
  }
  account(g->stats.all_gather, n * int64_t(sizeof(float)), start);
}

void broadcast(void *context, void *bytes, int64_t n, int32_t root) {
  Group *g = static_cast<Group *>(context);
  const double start = now();
  for (int64_t offset = 0; offset < n; offset += kMaxCount) {
    MPI_Request request;
    const int started =
        MPI_Ibcast(static_cast<char *>(bytes) + offset, chunk(n, offset),
                   MPI_BYTE, root, g->comm, &request);
    complete(g, started, &request, {"broadcast", n, "bytes", root});
  }
  account(g->stats.broadcast, n, start);
}

// ATTN_TP_TIMEOUT, or the default; false when it is set but not a positive
// number.
bool readTimeout(double *timeout) {
  const char *text = getenv("ATTN_TP_TIMEOUT");
  *timeout = kDefaultTimeout;
  if (!text)
    return true;
  char *end = nullptr;
  const double value = strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(value) || !(value > 0))
    return false;
  *timeout = value;
  return true;
}

} // namespace

extern "C" {

int attnrt_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
         getenv("PMI_SIZE");
}

attnrt_communicator *attnrt_mpi_init(int *argc, char ***argv, char *error,
                                     size_t error_size) {
  double timeout;
  if (!readTimeout(&timeout)) {
    setError(error, error_size,
             "ATTN_TP_TIMEOUT is \"%s\": expected a positive number of "
             "seconds (the tensor-parallel collectives' deadline)",
             getenv("ATTN_TP_TIMEOUT"));
    return nullptr;
  }
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized) {
    setError(error, error_size,
             "MPI was already finalized: attnrt_mpi_init works once per process");
    return nullptr;
  }
  char mpi[MPI_MAX_ERROR_STRING];
  int provided = 0;
  int code = initialized
                 ? MPI_Query_thread(&provided)
                 : MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  if (code != MPI_SUCCESS) {
    setError(error, error_size, "MPI_Init_thread failed: %s",
             mpiMessage(code, mpi));
    return nullptr;
  }
  // attn-serve calls the model (and so the collectives) from its
  // scheduler thread and a heartbeat thread, one at a time.
  if (provided < MPI_THREAD_SERIALIZED) {
    setError(error, error_size,
             "MPI provides thread support level %d, below the "
             "MPI_THREAD_SERIALIZED tensor parallelism needs",
             provided);
    return nullptr;
  }
  // Errors are returned (and reported), not fatal: on our communicator, and
  // for calls tied to none (datatypes) when the MPI is ours to configure.
  if (!initialized)
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

  Group *g = new (std::nothrow) Group();
  if (!g) {
    setError(error, error_size, "out of memory");
    return nullptr;
  }
  g->comm = MPI_COMM_NULL;
  g->timeout = timeout;
  g->owns_mpi = !initialized;
  const char *failed = nullptr;
  MPI_Comm local = MPI_COMM_NULL;
  int rank = 0, size = 0, local_size = 0;
  // A private communicator: our collectives never match an application's.
  if ((code = MPI_Comm_dup(MPI_COMM_WORLD, &g->comm)) != MPI_SUCCESS)
    failed = "MPI_Comm_dup";
  else if ((code = MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN)) !=
           MPI_SUCCESS)
    failed = "MPI_Comm_set_errhandler";
  else if ((code = MPI_Comm_rank(g->comm, &rank)) != MPI_SUCCESS ||
           (code = MPI_Comm_size(g->comm, &size)) != MPI_SUCCESS)
    failed = "MPI_Comm_rank";
  else if ((code = MPI_Comm_split_type(g->comm, MPI_COMM_TYPE_SHARED, rank,
                                       MPI_INFO_NULL, &local)) != MPI_SUCCESS ||
           (code = MPI_Comm_size(local, &local_size)) != MPI_SUCCESS)
    failed = "MPI_Comm_split_type";
  if (local != MPI_COMM_NULL)
    MPI_Comm_free(&local);
  if (failed) {
    setError(error, error_size, "%s failed: %s", failed, mpiMessage(code, mpi));
    if (g->comm != MPI_COMM_NULL)
      MPI_Comm_free(&g->comm);
    delete g;
    return nullptr;
  }
  g->local_size = local_size;
  g->pub.rank = rank;
  g->pub.size = size;
  g->pub.context = g;
  g->pub.all_reduce_sum = allReduceSum;
  g->pub.all_gather = allGather;
  g->pub.broadcast = broadcast;
  return &g->pub;
}

int attnrt_mpi_barrier(attnrt_communicator *comm, double timeout_seconds,
                       char *error, size_t error_size) {
  if (!comm || !(timeout_seconds > 0)) {
    setError(error, error_size,
             "attnrt_mpi_barrier: %s", !comm ? "comm is NULL"
                                             : "the timeout must be positive");
    return ATTNRT_ERROR_ARGUMENT;
  }
  MPI_Request request;
  int code = MPI_Ibarrier(group(comm)->comm, &request);
  const Wait wait = code != MPI_SUCCESS
                        ? Wait::Failed
                        : waitFor(&request, timeout_seconds, &code);
  if (wait == Wait::Done)
    return ATTNRT_OK;
  char mpi[MPI_MAX_ERROR_STRING];
  if (wait == Wait::TimedOut)
    setError(error, error_size,
             "not every rank reached the barrier within %g s (one died, "
             "failed or is still busy)",
             timeout_seconds);
  else
    setError(error, error_size, "the barrier failed: %s",
             mpiMessage(code, mpi));
  return ATTNRT_MPI_ERROR_GROUP;
}

void attnrt_mpi_abort(attnrt_communicator *comm, const char *message) {
  if (!message)
    message = "aborting the tensor-parallel group";
  fflush(stdout);
  if (comm) {
    fprintf(stderr, "attn: rank %d of %d: %s\n", comm->rank, comm->size,
            message);
    MPI_Abort(group(comm)->comm, 3);
  } else {
    fprintf(stderr, "attn: %s\n", message);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized)
      MPI_Abort(MPI_COMM_WORLD, 3);
  }
  _Exit(3); // MPI_Abort does not return; this is in case it did
}

int32_t attnrt_mpi_local_size(const attnrt_communicator *comm) {
  return comm ? group(comm)->local_size : 1;
}

void attnrt_mpi_stats_get(const attnrt_communicator *comm,
                          attnrt_mpi_stats *out) {
  if (out)
    *out = comm ? group(comm)->stats : attnrt_mpi_stats{};
}

void attnrt_mpi_stats_reset(attnrt_communicator *comm) {
  if (comm)
    group(comm)->stats = attnrt_mpi_stats{};
}

void attnrt_mpi_finalize(attnrt_communicator *comm) {
  if (!comm)
    return;
  Group *g = group(comm);
  // MPI_Finalize synchronizes with every rank without a deadline.
  MPI_Request request;
  complete(g, MPI_Ibarrier(g->comm, &request), &request,
           {"the barrier before MPI_Finalize"});
  MPI_Comm_free(&g->comm);
  const bool owns_mpi = g->owns_mpi;
  delete g;
  if (owns_mpi)
    MPI_Finalize();
}

} // extern "C"
