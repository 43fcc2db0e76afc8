/**
 * ucx-spec: the inter-node stage of the RDMA barrier (Gupta et al., sections
 * 4 and 5.1), on UCP's RMA.
 *
 * Every participant (a node's master) registers one buffer of 8-byte slots,
 * and the buffers' addresses and keys are exchanged once.  A barrier is
 * pairwise exchange by recursive doubling: at step k a participant writes
 * the barrier's sequence number into slot k of its partner with one RDMA
 * write (ucp_put_nbx) and waits until its own slot k holds at least that
 * number; it reads only its own memory.  With N not a power of two, the
 * N - P participants beyond the largest power of two P first write into a
 * partner below P and, once those P have met, are released by it: two more
 * steps, ceil(log2 N) + 2 in all.  Numbers only grow, so consecutive
 * barriers cannot be confused and no slot is ever cleared.
 *
 * This file knows nothing of MPI: the address exchange is a callback.
 *
 * See file LICENSE for terms.
 */

#ifndef SPEC_BARRIER_RDMA_H_
#define SPEC_BARRIER_RDMA_H_

#include <stddef.h>
#include <stdint.h>


typedef struct spec_barrier_rdma spec_barrier_rdma_t;

/* Gather @a len bytes from every participant into @a out, in rank order;
 * 0 on success.  Every participant calls it the same number of times. */
typedef int (*spec_barrier_allgather_func_t)(const void *in, void *out,
                                             size_t len, void *arg);


/**
 * Collective over the participants: set up UCP, register the slots and
 * exchange them.  A participant that fails locally still takes part in every
 * exchange, so that none waits for it; each then learns whether all
 * succeeded.
 * @return 0 when every participant succeeded, else -1 (and *b_p NULL).
 */
int spec_barrier_rdma_create(spec_barrier_rdma_t **b_p, int rank, int size,
                             spec_barrier_allgather_func_t allgather,
                             void *arg);

/* What a wait calls besides UCP's progress, every so often (MPI's) */
void spec_barrier_rdma_set_progress(spec_barrier_rdma_t *b,
                                    void (*progress)(void *arg), void *arg);

/* The barrier numbered @a seq (1, 2, ...) among the participants */
void spec_barrier_rdma_wait(spec_barrier_rdma_t *b, uint64_t seq);

/**
 * Collective, before destroy: finish what UCP still owes the peers (its
 * connection set-up among others).  Every participant progresses until
 * @a all_done says each of them is done, so that none stops answering a
 * peer that still waits for it.  @a all_done is called with whether this
 * participant is; it returns 1 once all are.
 */
void spec_barrier_rdma_quiesce(spec_barrier_rdma_t *b,
                               int (*all_done)(int done, void *arg),
                               void *arg);

void spec_barrier_rdma_destroy(spec_barrier_rdma_t *b);

#endif
