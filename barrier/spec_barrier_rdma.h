/**
 * ucx-spec: the inter-node stage of the RDMA barrier (Gupta et al., sections
 * 4 and 5.1), on UCP's RMA.
 *
 * Every participant (a node's master) registers one buffer of 8-byte slots,
 * and the buffers' addresses and keys are exchanged once.  A barrier runs
 * the participant's operations (spec_barrier_pattern.h, recursive doubling
 * or k-ing): each write is one ucp_put_nbx of the barrier's sequence number
 * into a peer's slot, each wait a poll of one of our own slots.
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
 * succeeded.  @a radix (at least 2) is the exchange's group size.
 * @return 0 when every participant succeeded, else -1 (and *b_p NULL).
 */
int spec_barrier_rdma_create(spec_barrier_rdma_t **b_p, int rank, int size,
                             int radix, spec_barrier_allgather_func_t allgather,
                             void *arg);

/* What a wait calls besides UCP's progress, every so often (MPI's); with
 * @a yield_always (more processes than cores) every spin yields the core */
void spec_barrier_rdma_set_progress(spec_barrier_rdma_t *b,
                                    void (*progress)(void *arg), void *arg,
                                    int yield_always);

/**
 * The barrier numbered @a seq (1, 2, ...) among the participants.
 * @return 0, or -1 once a write to a peer has failed: this stage is then
 *         broken for good (every later call returns -1 at once), and peers
 *         may wait for the write forever, as for a process that died.
 */
int spec_barrier_rdma_wait(spec_barrier_rdma_t *b, uint64_t seq);

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
