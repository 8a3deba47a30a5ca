//===- ProcessGroup.h - the tensor-parallel group of a tool ----*- C++ -*-===//
//
// `mpirun -np N attn-run ...` runs N processes that each hold one rank's
// slice of the model (attn-compile --tensor-parallel N). A ProcessGroup is
// that job seen from one process: the MPI communicator (attnrt-mpi) when an
// MPI launcher started it, otherwise a group of one. Tools built without MPI
// refuse to run under a launcher instead of running N whole copies.
//
//===----------------------------------------------------------------------===//

#ifndef ATTN_TOOLS_PROCESSGROUP_H
#define ATTN_TOOLS_PROCESSGROUP_H

#include "attnrt/attnrt.h"

#include <cstdint>
#include <string>

namespace attn {
namespace tools {

class ProcessGroup {
public:
  ProcessGroup() = default;
  ProcessGroup(const ProcessGroup &) = delete;
  ProcessGroup &operator=(const ProcessGroup &) = delete;
  /// Leaves the group (a bounded wait for every rank, then MPI_Finalize).
  ~ProcessGroup();

  /// Joins the launcher's job when one started this process; false with a
  /// message when this build has no MPI or MPI fails. Call once, early.
  bool start(int *argc, char ***argv, std::string &error);

  /// The communicator to load a model with: null for a group of one.
  const attnrt_communicator *communicator() const {
    return comm && comm->size > 1 ? comm : nullptr;
  }
  int32_t rank() const { return comm ? comm->rank : 0; }
  int32_t size() const { return comm ? comm->size : 1; }
  /// Rank 0, which prints and writes files.
  bool leader() const { return rank() == 0; }
  /// Threads for each rank when --threads is not given: the cores shared
  /// by the ranks on this machine.
  int32_t threadsPerRank() const;

  /// Ends every rank of the job with `message` (from this rank) on stderr.
  [[noreturn]] void abort(const std::string &message);
  /// A tool's error: "<tool>: error: <message>"; in a group it ends every
  /// rank (so that none waits for this one), else it is fail()'s line and
  /// exit code.
  int fail(const char *tool, const std::string &message);
  /// After this rank loaded its model: waits for every rank's (compiling
  /// on first use may take minutes on some), at most an hour; false with a
  /// message when one does not arrive.
  bool waitForLoads(std::string &error);
  /// The threads to give the model: `requested` (--threads) when given,
  /// else in a group the cores shared by the ranks on this machine, else 0
  /// (the library's default).
  int32_t threadsFor(int64_t requested) const;
  /// Rank 0's bytes[0, n) to every rank.
  void broadcast(void *bytes, int64_t n);
  /// Waits at most `seconds` for every rank (e.g. "every rank has loaded
  /// the model"); false with a message when one does not arrive.
  bool barrier(double seconds, std::string &error);
  /// Seconds this rank spent in all-reduce and all-gather since the last
  /// resetTimes, and their calls.
  void collectiveTime(double &seconds, int64_t &calls) const;
  void resetTimes();

private:
  attnrt_communicator *comm = nullptr;
};

} // namespace tools
} // namespace attn

#endif // ATTN_TOOLS_PROCESSGROUP_H
