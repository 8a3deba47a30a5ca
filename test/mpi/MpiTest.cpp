//===- MpiTest.cpp - attnrt-mpi under mpirun -------------------------------===//
//
// One program, run as every rank of an mpirun job (test/mpi/CMakeLists.txt):
//   attnrt-mpi-test collectives N   the collectives' results and counters on
//                                   N ranks; every rank checks, and every
//                                   rank exits 1 when any rank failed
//   attnrt-mpi-test hang            rank 1 stops itself (SIGSTOP) after a
//                                   few collectives: rank 0 must time out
//   attnrt-mpi-test die             rank 1 kills itself (SIGKILL) after a
//                                   few collectives: rank 0 must not hang
//   attnrt-mpi-test bad-timeout     attnrt_mpi_init refuses bad
//                                   ATTN_TP_TIMEOUT values
// Each rank first prints "pid P" so that run_job.py can check that none is
// left behind.
//
//===----------------------------------------------------------------------===//

#include "attnrt/mpi.h"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

int rank = -1;
int failures = 0;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      ++failures;                                                              \
      fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed: ", rank, __FILE__,    \
              __LINE__, #cond);                                                \
      fprintf(stderr, __VA_ARGS__);                                            \
      fputc('\n', stderr);                                                     \
    }                                                                          \
  } while (0)

attnrt_communicator *init() {
  printf("pid %d\n", static_cast<int>(getpid()));
  fflush(stdout);
  char error[256];
  attnrt_communicator *comm = attnrt_mpi_init(nullptr, nullptr, error, sizeof error);
  if (!comm) {
    fprintf(stderr, "attnrt_mpi_init: %s\n", error);
    exit(1);
  }
  rank = comm->rank;
  return comm;
}

// The elements that differ from expected(i), reported once with the first.
template <class T, class Expected>
void checkAll(const char *what, const std::vector<T> &got, Expected expected) {
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i)
    if (got[i] != expected(i) && wrong++ == 0)
      first = static_cast<int64_t>(i);
  CHECK(wrong == 0, "%s: %lld of %zu elements wrong, the first [%lld] = %g, expected %g",
        what, static_cast<long long>(wrong), got.size(),
        static_cast<long long>(first), first < 0 ? 0.0 : double(got[first]),
        first < 0 ? 0.0 : double(expected(first)));
}

void checkCounter(const char *kind, const attnrt_mpi_counter &got,
                  int64_t calls, int64_t bytes) {
  CHECK(got.calls == calls, "%s calls %lld, expected %lld", kind,
        static_cast<long long>(got.calls), static_cast<long long>(calls));
  CHECK(got.bytes == bytes, "%s bytes %lld, expected %lld", kind,
        static_cast<long long>(got.bytes), static_cast<long long>(bytes));
  CHECK(calls == 0 ? got.seconds == 0 : got.seconds > 0 && got.seconds < 600,
        "%s seconds %g", kind, got.seconds);
}

int collectives(int expected_size) {
  attnrt_communicator *comm = init();
  const int size = comm->size;
  CHECK(size == expected_size, "size %d, expected %d", size, expected_size);
  CHECK(rank >= 0 && rank < size, "rank %d of %d", rank, size);
  CHECK(attnrt_mpi_local_size(comm) == size, "local size %d, expected %d",
        attnrt_mpi_local_size(comm), size);
  CHECK(attnrt_mpi_launched(), "attnrt_mpi_launched() is 0 under mpirun");

  attnrt_mpi_stats stats;
  attnrt_mpi_stats_get(comm, &stats);
  checkCounter("all-reduce after init", stats.all_reduce, 0, 0);
  int64_t calls[3] = {}, bytes[3] = {}; // all-reduce, all-gather, broadcast

  // Integer-valued floats below 2^24: every sum is exact in any order.
  const int64_t lengths[] = {1, 768, 100003};
  for (int64_t n : lengths) {
    std::vector<float> data(n);
    for (int64_t i = 0; i < n; ++i)
      data[i] = float((rank + 1) * (i % 1000) + rank);
    comm->all_reduce_sum(comm->context, data.data(), n);
    const double s1 = size * (size + 1) / 2, s0 = size * (size - 1) / 2;
    checkAll(("all-reduce of " + std::to_string(n)).c_str(), data,
             [&](size_t i) { return float((i % 1000) * s1 + s0); });
    ++calls[0];
    bytes[0] += 4 * n;
  }
  float untouched = 42;
  comm->all_reduce_sum(comm->context, &untouched, 0);
  CHECK(untouched == 42, "an all-reduce of 0 floats wrote %g", untouched);
  ++calls[0];

  for (int64_t n : lengths) {
    std::vector<float> data(n), out(size * n, NAN);
    for (int64_t i = 0; i < n; ++i)
      data[i] = float(rank * 131072 + i % 100000);
    comm->all_gather(comm->context, data.data(), n, out.data());
    // Rank-major: rank k's data at out[k * n, (k + 1) * n).
    checkAll(("all-gather of " + std::to_string(n)).c_str(), out, [&](size_t j) {
      return float((j / n) * 131072 + (j % n) % 100000);
    });
    ++calls[1];
    bytes[1] += 4 * n;
  }

  // From the last rank (non-zero), up to 5 MiB (split in chunks in the test
  // build with small MPI counts), and once from rank 0.
  struct { int64_t n; int root; } casts[] = {
      {1, size - 1}, {4099, size - 1}, {5 * 1048576 + 3, size - 1}, {768, 0}};
  for (auto c : casts) {
    auto pattern = [&](size_t i) {
      return static_cast<unsigned char>((i * 7 + 13 * c.root + (i >> 12)) & 0xff);
    };
    std::vector<unsigned char> bytes_(c.n, 0xAA);
    if (rank == c.root)
      for (int64_t i = 0; i < c.n; ++i)
        bytes_[i] = pattern(i);
    comm->broadcast(comm->context, bytes_.data(), c.n, c.root);
    checkAll(("broadcast of " + std::to_string(c.n) + " bytes from rank " +
              std::to_string(c.root)).c_str(),
             bytes_, pattern);
    ++calls[2];
    bytes[2] += c.n;
  }

  attnrt_mpi_stats_get(comm, &stats);
  checkCounter("all-reduce", stats.all_reduce, calls[0], bytes[0]);
  checkCounter("all-gather", stats.all_gather, calls[1], bytes[1]);
  checkCounter("broadcast", stats.broadcast, calls[2], bytes[2]);
  attnrt_mpi_stats_reset(comm);
  attnrt_mpi_stats_get(comm, &stats);
  checkCounter("all-reduce after reset", stats.all_reduce, 0, 0);
  checkCounter("broadcast after reset", stats.broadcast, 0, 0);
  attnrt_mpi_stats_get(nullptr, &stats);
  checkCounter("all-gather of NULL", stats.all_gather, 0, 0);
  CHECK(attnrt_mpi_local_size(nullptr) == 1, "local size of NULL");

  char error[256] = "";
  CHECK(attnrt_mpi_barrier(comm, 60, error, sizeof error) == ATTNRT_OK,
        "barrier: %s", error);
  CHECK(attnrt_mpi_barrier(comm, 0, error, sizeof error) == ATTNRT_ERROR_ARGUMENT,
        "a barrier with timeout 0");
  CHECK(attnrt_mpi_barrier(comm, NAN, error, sizeof error) == ATTNRT_ERROR_ARGUMENT,
        "a barrier with timeout NaN");
  CHECK(strstr(error, "timeout"), "barrier error \"%s\"", error);

  // Every rank learns whether any failed, so that all exit 1 together.
  float group_failures = float(failures);
  comm->all_reduce_sum(comm->context, &group_failures, 1);
  attnrt_mpi_finalize(comm);

  // The launcher detection on its own variables.
  const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"};
  std::string saved[3];
  bool had[3];
  for (int i = 0; i < 3; ++i) {
    const char *v = getenv(vars[i]);
    had[i] = v != nullptr;
    saved[i] = v ? v : "";
    unsetenv(vars[i]);
  }
  CHECK(!attnrt_mpi_launched(), "launched without the launcher's variables");
  for (int i = 0; i < 3; ++i) {
    setenv(vars[i], "2", 1);
    CHECK(attnrt_mpi_launched(), "not launched with %s", vars[i]);
    unsetenv(vars[i]);
  }
  for (int i = 0; i < 3; ++i)
    if (had[i])
      setenv(vars[i], saved[i].c_str(), 1);

  if (group_failures > 0 || failures > 0) {
    fprintf(stderr, "rank %d: %d failures here, %g in the group\n", rank,
            failures, group_failures);
    return 1;
  }
  printf("rank %d of %d: ok\n", rank, size);
  return 0;
}

// Rank 1 leaves the group after a few collectives by `signal`; rank 0 keeps
// calling all-reduce, which must never return.
int leave(int signal) {
  attnrt_communicator *comm = init();
  std::vector<float> data(768, 1.0f);
  for (int step = 0;; ++step) {
    if (rank == 1 && step == 3) {
      fprintf(stderr, "rank 1: raising %s\n", strsignal(signal));
      raise(signal);
    }
    comm->all_reduce_sum(comm->context, data.data(), 768);
    if (step >= 3) {
      fprintf(stderr, "rank %d: all-reduce returned after rank 1 left\n", rank);
      return 1;
    }
  }
}

int badTimeout() {
  printf("pid %d\n", static_cast<int>(getpid()));
  fflush(stdout);
  if (const char *r = getenv("OMPI_COMM_WORLD_RANK")) // before init, for messages
    rank = atoi(r);
  const char *bad[] = {"abc", "-1", "0", "", "nan", "inf", "3s", "1e999"};
  for (const char *value : bad) {
    setenv("ATTN_TP_TIMEOUT", value, 1);
    char error[256] = "";
    attnrt_communicator *comm = attnrt_mpi_init(nullptr, nullptr, error, sizeof error);
    CHECK(!comm, "ATTN_TP_TIMEOUT=\"%s\" accepted", value);
    CHECK(strstr(error, "ATTN_TP_TIMEOUT") &&
              strstr(error, ("\"" + std::string(value) + "\"").c_str()),
          "the error for \"%s\" is \"%s\"", value, error);
    if (comm)
      return 1; // MPI is initialized: do not call init again
    if (value == bad[0])
      printf("ATTN_TP_TIMEOUT=%s: %s\n", value, error);
  }
  char error[256] = "";
  setenv("ATTN_TP_TIMEOUT", "7.5", 1);
  attnrt_communicator *comm = attnrt_mpi_init(nullptr, nullptr, error, sizeof error);
  CHECK(comm, "ATTN_TP_TIMEOUT=7.5 refused: %s", error);
  attnrt_mpi_finalize(comm);
  return failures ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "collectives" && argc == 3)
    return collectives(atoi(argv[2]));
  if (mode == "hang")
    return leave(SIGSTOP);
  if (mode == "die")
    return leave(SIGKILL);
  if (mode == "bad-timeout")
    return badTimeout();
  fprintf(stderr, "usage: attnrt-mpi-test collectives N | hang | die | bad-timeout\n");
  return 2;
}
