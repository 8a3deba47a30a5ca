/*===- mpi.h - a tensor-parallel group over MPI -----------------*- C -*-===*
 *
 * attnrt_communicator (attnrt.h) implemented with MPI: static library
 * attnrt-mpi, built when CMake finds MPI. Each process of an `mpirun -np N`
 * job is one rank of the group.
 *
 * Every collective has a deadline: when the other ranks do not complete it
 * within $ATTN_TP_TIMEOUT seconds (default 60), a rank died or stopped
 * responding, and the process prints one line to stderr
 *   attn: rank 1 of 2: all-reduce of 768 floats waited 60 s for the other
 *   ranks (one died or stopped responding); aborting the tensor-parallel group
 * and calls MPI_Abort (exit code 3), which ends every rank of the job. An MPI
 * error ends the job the same way, with MPI's message. While it waits a rank
 * yields its CPU after a short spin, so oversubscribed runs (more ranks than
 * cores) still make progress.
 *
 * Conventions are attnrt.h's: functions that can fail take `char *error,
 * size_t error_size` and write a one-line, NUL-terminated message there
 * (error may be NULL). The functions and the collectives may be called
 * from any thread, but one call at a time (MPI_THREAD_SERIALIZED: the
 * caller serializes), and the collectives in the same order on every rank.
 *
 * Typical use by a tool:
 *   attnrt_communicator *comm = NULL;
 *   if (attnrt_mpi_launched()) {
 *     comm = attnrt_mpi_init(&argc, &argv, err, sizeof err);
 *     if (!comm) { fprintf(stderr, "attn: %s\n", err); return 1; }
 *   }
 *   model = attnrt_model_load_parallel(lib, weights, comm, err, sizeof err);
 *   if (comm && attnrt_mpi_barrier(comm, 1800, err, sizeof err))
 *     attnrt_mpi_abort(comm, err);
 *   ... generate ...
 *   attnrt_model_free(model);
 *   attnrt_mpi_finalize(comm);
 *===----------------------------------------------------------------------===*/

#ifndef ATTNRT_MPI_H
#define ATTNRT_MPI_H

#include <attnrt/attnrt.h>

#if defined(__GNUC__)
#define ATTNRT_MPI_NORETURN __attribute__((noreturn))
#else
#define ATTNRT_MPI_NORETURN
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Return code of attnrt_mpi_barrier beside attnrt.h's: the group failed (a
 * rank did not arrive in time, or MPI reported an error). */
enum { ATTNRT_MPI_ERROR_GROUP = 16 };

/* Nonzero when this process was started by an MPI launcher: OpenMPI's
 * OMPI_COMM_WORLD_SIZE, PMIx's PMIX_RANK or MPICH's / Slurm's PMI_SIZE is in
 * the environment. Lets a tool run without MPI (one rank, no
 * attnrt_mpi_init) when started on its own. */
int attnrt_mpi_launched(void);

/* Initializes MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED; an MPI the
 * application already initialized is used as it is and left initialized by
 * attnrt_mpi_finalize) and returns the group of all the job's ranks: a
 * private duplicate of MPI_COMM_WORLD whose errors are returned, not fatal.
 * argc and argv are passed to MPI_Init_thread and may be NULL. Reads
 * $ATTN_TP_TIMEOUT, the collectives' deadline in seconds (a positive number;
 * default 60). Once per process: MPI cannot be initialized again after
 * attnrt_mpi_finalize.
 * Returns NULL with a message when ATTN_TP_TIMEOUT is not a positive number
 * (checked first, before MPI is initialized), when MPI fails or lacks
 * MPI_THREAD_SERIALIZED. After a failure past MPI's initialization the process
 * should report it and exit non-zero (the launcher then ends the job). */
attnrt_communicator *attnrt_mpi_init(int *argc, char ***argv, char *error,
                                     size_t error_size);

/* Waits until every rank has called attnrt_mpi_barrier, at most
 * timeout_seconds (> 0), e.g. "every rank has loaded the model", which can
 * take minutes when a model is compiled on first use. Returns ATTNRT_OK;
 * ATTNRT_ERROR_ARGUMENT for a NULL comm or a timeout that is not a positive
 * number; ATTNRT_MPI_ERROR_GROUP with a message when the other ranks did not
 * all arrive in time or MPI failed. Unlike the collectives it does not abort:
 * the caller reports and then calls attnrt_mpi_abort, since the group cannot
 * be used after a failed barrier. */
int attnrt_mpi_barrier(attnrt_communicator *comm, double timeout_seconds,
                       char *error, size_t error_size);

/* Prints "attn: rank R of N: <message>" to stderr and ends every rank of the
 * job (MPI_Abort, exit code 3). Does not return. With comm NULL it prints
 * "attn: <message>" and aborts MPI_COMM_WORLD when MPI is initialized (e.g.
 * after attnrt_mpi_init failed), else exits with code 3. */
ATTNRT_MPI_NORETURN void attnrt_mpi_abort(attnrt_communicator *comm,
                                          const char *message);

/* The number of the group's ranks on this machine, this one included
 * (MPI_COMM_TYPE_SHARED, found at init): a tool gives each rank
 * cores / local_size threads. 1 for NULL. */
int32_t attnrt_mpi_local_size(const attnrt_communicator *comm);

/* Time spent inside each kind of collective since init or the last reset,
 * e.g. a benchmark's "share of the time in all-reduce". */
typedef struct {
  int64_t calls;  /* hook calls */
  int64_t bytes;  /* this rank's data: n * 4 for all-reduce and all-gather
                     (not the gathered output), n for broadcast */
  double seconds; /* wall time inside the hook, waiting included
                     (CLOCK_MONOTONIC) */
} attnrt_mpi_counter;

typedef struct {
  attnrt_mpi_counter all_reduce, all_gather, broadcast;
} attnrt_mpi_stats;

/* Copies comm's counters to *out (all zero for a NULL comm). */
void attnrt_mpi_stats_get(const attnrt_communicator *comm,
                          attnrt_mpi_stats *out);
/* Sets comm's counters to zero. */
void attnrt_mpi_stats_reset(attnrt_communicator *comm);

/* Waits for every rank (a barrier with the collectives' deadline, aborting
 * as they do when one does not arrive, so that a stuck rank cannot hang
 * MPI_Finalize), frees comm and finalizes MPI when attnrt_mpi_init
 * initialized it. Collective: every rank calls it. NULL is allowed (does
 * nothing). */
void attnrt_mpi_finalize(attnrt_communicator *comm);

#ifdef __cplusplus
}
#endif

#endif /* ATTNRT_MPI_H */
