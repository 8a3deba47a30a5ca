//===- ProcessGroup.cpp - the tensor-parallel group of a tool -------------===//

#include "ProcessGroup.h"

#include "ToolSupport.h"

#ifdef ATTN_HAVE_MPI
#include "attnrt/mpi.h"
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <thread>

using namespace attn::tools;

int ProcessGroup::fail(const char *tool, const std::string &message) {
  if (communicator())
    abort(std::string(tool) + ": error: " + message);
  return tools::fail(tool, message);
}

bool ProcessGroup::waitForLoads(std::string &error) {
  std::string message;
  if (barrier(3600, message))
    return true;
  error = "waiting for every rank to load the model: " + message;
  return false;
}

int32_t ProcessGroup::threadsFor(int64_t requested) const {
  if (requested > 0)
    return static_cast<int32_t>(requested);
  return communicator() ? threadsPerRank() : 0;
}

#ifdef ATTN_HAVE_MPI

ProcessGroup::~ProcessGroup() { attnrt_mpi_finalize(comm); }

bool ProcessGroup::start(int *argc, char ***argv, std::string &error) {
  if (!attnrt_mpi_launched())
    return true;
  char message[512] = "";
  comm = attnrt_mpi_init(argc, argv, message, sizeof message);
  if (!comm)
    error = message;
  return comm != nullptr;
}

int32_t ProcessGroup::threadsPerRank() const {
  int32_t cores = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / std::max(1, attnrt_mpi_local_size(comm)));
}

void ProcessGroup::abort(const std::string &message) {
  attnrt_mpi_abort(comm, message.c_str());
}

void ProcessGroup::broadcast(void *bytes, int64_t n) {
  if (communicator())
    comm->broadcast(comm->context, bytes, n, 0);
}

bool ProcessGroup::barrier(double seconds, std::string &error) {
  if (!communicator())
    return true;
  char message[512] = "";
  if (attnrt_mpi_barrier(comm, seconds, message, sizeof message) == ATTNRT_OK)
    return true;
  error = message;
  return false;
}

void ProcessGroup::collectiveTime(double &seconds, int64_t &calls) const {
  attnrt_mpi_stats stats;
  attnrt_mpi_stats_get(comm, &stats);
  seconds = stats.all_reduce.seconds + stats.all_gather.seconds;
  calls = stats.all_reduce.calls + stats.all_gather.calls;
}

void ProcessGroup::resetTimes() {
  if (comm)
    attnrt_mpi_stats_reset(comm);
}

#else // a build without MPI: a group of one

ProcessGroup::~ProcessGroup() = default;

bool ProcessGroup::start(int *, char ***, std::string &error) {
  // The variables OpenMPI, PMIx and MPICH/Slurm launchers set.
  for (const char *launcher : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(launcher)) {
      error = "started by an MPI launcher, but this build has no MPI (install "
              "libopenmpi-dev and rebuild) and cannot run tensor parallel";
      return false;
    }
  return true;
}

int32_t ProcessGroup::threadsPerRank() const {
  return static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));
}

void ProcessGroup::abort(const std::string &message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(1);
}

void ProcessGroup::broadcast(void *, int64_t) {}

bool ProcessGroup::barrier(double, std::string &) { return true; }

void ProcessGroup::collectiveTime(double &seconds, int64_t &calls) const {
  seconds = 0;
  calls = 0;
}

void ProcessGroup::resetTimes() {}

#endif
