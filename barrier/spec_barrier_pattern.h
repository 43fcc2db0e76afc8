/**
 * ucx-spec: who writes to whom in the RDMA barrier's inter-node stage
 * (Gupta et al., sections 4 and 5.1), worked out once per participant.
 *
 * A barrier is pairwise exchange by recursive doubling: at step s a
 * participant writes the barrier's sequence number into its partner's slot
 * for step s with one RDMA write, and waits until its own slot for step s
 * holds at least that number; it reads only its own memory.  With N not a
 * power of two, the N - P participants beyond the largest power of two P
 * first write into a partner below P (their proxy) and, once those P have
 * met, are released by it: two more steps, ceil(log2 N) + 2 in all.
 * Numbers only grow, so consecutive barriers cannot be confused and no slot
 * is ever cleared.
 *
 * A radix k > 2 generalises the exchange to recursive k-ing, as UCC's
 * k-nomial barrier does (UCC_TL_UCP_BARRIER_KN_RADIX: 8 in its recent
 * releases, 4 before): at each step a participant writes to the k - 1
 * others of its group and then waits for their k - 1 writes, so that
 * log_k N steps replace log2 N, each with more writes in flight.  P is then
 * the largest power of k, the exchange runs among the largest multiple of P
 * (whose last step's groups have fewer than k members), and the remaining
 * participants, fewer than P, join through a proxy as above.
 *
 * The result is a list of operations the barrier runs in order; it knows
 * nothing of UCP or MPI.
 *
 * See file LICENSE for terms.
 */

#ifndef SPEC_BARRIER_PATTERN_H_
#define SPEC_BARRIER_PATTERN_H_


typedef struct {
    int      peer;    /* the participant written to, or awaited */
    unsigned slot;    /* in the written participant's slots, or our own */
    int      write;   /* else wait until our slot holds the number */
} spec_barrier_op_t;

typedef struct {
    spec_barrier_op_t *ops;
    unsigned          num_ops;
    unsigned          num_slots;  /* each participant's, the same for all */
} spec_barrier_pattern_t;


/**
 * The operations of participant @a rank of @a size (at least 1), with group
 * size @a radix (at least 2; more than @a size is taken as @a size).
 * @return 0, or -1 when out of memory or given bad arguments.
 */
int spec_barrier_pattern_build(spec_barrier_pattern_t *p, int rank, int size,
                               int radix);

void spec_barrier_pattern_free(spec_barrier_pattern_t *p);

#endif
