/**
 * ucx-spec: the shared-memory stage of the RDMA barrier (Gupta et al.,
 * section 5.2): the processes of one node meet through one cache line each.
 *
 * A flat tree: every process but the node's master writes the barrier's
 * sequence number into its own line; the master waits until every line has
 * it, runs whatever joins the nodes (the inter-node stage), then writes the
 * number into its own line, which all the others wait for.  Sequence numbers
 * only grow and every wait is for "at least", so a process that is already
 * in the next barrier can never be taken for one still in this one.
 *
 * A process that waits calls the owner's progress function every so often:
 * a barrier is a blocking MPI call, and must not starve the communication
 * others wait on (a passive-target MPI_Accumulate into this process, for
 * one).
 *
 * The lines live in one System V segment that the master creates and marks
 * for removal once every process has attached: nothing outlives the job.
 * This file knows nothing of MPI; barrier/ attaches it to a communicator.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_BARRIER_H_
#define UCT_SPECRDV_SHM_BARRIER_H_

#include <stdint.h>


typedef struct uct_specrdv_shm_barrier_line {
    volatile uint64_t seq;
    uint8_t           pad[64 - sizeof(uint64_t)];
} __attribute__((aligned(64))) uct_specrdv_shm_barrier_line_t;


typedef struct uct_specrdv_shm_barrier {
    uct_specrdv_shm_barrier_line_t *lines;  /* one per process of the node */
    int                            size;
    int                            rank;    /* 0: the master */
    uint64_t                       seq;     /* barriers entered so far */
    void                           (*progress)(void *arg);
    void                           *progress_arg;
    int                            yield_always; /* set by the owner when
                                                    the host has more
                                                    processes than cores */
} uct_specrdv_shm_barrier_t;


/* Master: a segment for @a size processes; returns its id, or -1 */
int uct_specrdv_shm_barrier_create(int size);

/* Every process, the master too: attach segment @a shmid as @a rank of
 * @a size, with the progress function waits call; 0 on success */
int uct_specrdv_shm_barrier_attach(uct_specrdv_shm_barrier_t *b, int shmid,
                                   int size, int rank,
                                   void (*progress)(void *arg),
                                   void *progress_arg);

/* Master, once every process has attached: the kernel frees the segment
 * with the last detach */
void uct_specrdv_shm_barrier_unlink(int shmid);

void uct_specrdv_shm_barrier_detach(uct_specrdv_shm_barrier_t *b);

/* Master: wait for every process of the node to arrive at the next barrier;
 * returns its sequence number */
uint64_t uct_specrdv_shm_barrier_gather(uct_specrdv_shm_barrier_t *b);

/* Master: let the node go */
void uct_specrdv_shm_barrier_release(uct_specrdv_shm_barrier_t *b);

/* Any other process: arrive, and wait for the master's release */
void uct_specrdv_shm_barrier_arrive(uct_specrdv_shm_barrier_t *b);

#endif
