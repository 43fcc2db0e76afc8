/**
 * ucx-spec: the RDMA barrier's operations; see spec_barrier_pattern.h.
 *
 * See file LICENSE for terms.
 */

#include "spec_barrier_pattern.h"

#include <stdlib.h>


/* Slots: 0 the arrival of the participant we are the proxy of; then k per
 * step, one for each member of our group by its digit (ours stays unused);
 * then our release by our proxy. */
typedef struct {
    int rank;
    int radix;      /* k */
    int loop;       /* the exchange's participants */
    int steps;
} spec_barrier_shape_t;


static unsigned spec_barrier_step_slot(const spec_barrier_shape_t *s,
                                       int step, int digit)
{
    return 1 + step * s->radix + digit;
}

static unsigned spec_barrier_release_slot(const spec_barrier_shape_t *s)
{
    return 1 + s->steps * s->radix;
}

static void spec_barrier_add(spec_barrier_pattern_t *p, int write, int peer,
                             unsigned slot)
{
    spec_barrier_op_t *op = &p->ops[p->num_ops++];

    op->write = write;
    op->peer  = peer;
    op->slot  = slot;
}

/* One step of recursive k-ing: write to every other member of our group,
 * then wait for each of them.  A step's stride is k^step; the last step of
 * an exchange of several powers of k has fewer than k members. */
static void spec_barrier_add_step(spec_barrier_pattern_t *p,
                                  const spec_barrier_shape_t *s, int step,
                                  int stride)
{
    int digit = (s->rank / stride) % s->radix;
    int write, j, peer;

    for (write = 1; write >= 0; --write) {
        for (j = 0; j < s->radix; ++j) {
            peer = s->rank + (j - digit) * stride;
            if ((j == digit) || (peer >= s->loop)) {
                continue;
            }
            spec_barrier_add(p, write, peer,
                             spec_barrier_step_slot(s, step,
                                                    write ? digit : j));
        }
    }
}

int spec_barrier_pattern_build(spec_barrier_pattern_t *p, int rank, int size,
                               int radix)
{
    spec_barrier_shape_t s = {.rank = rank};
    int pow_k = 1, step, stride;

    p->ops     = NULL;
    p->num_ops = 0;
    if ((size < 1) || (rank < 0) || (rank >= size) || (radix < 2)) {
        return -1;
    }

    /* P, the largest power of k that fits; the exchange runs among as many
     * multiples of it as fit */
    s.radix = (radix < size) ? radix : size;
    s.radix = (s.radix < 2) ? 2 : s.radix;
    while (pow_k <= size / s.radix) {
        pow_k *= s.radix;
        ++s.steps;
    }
    s.loop = (size / pow_k) * pow_k;
    if (s.loop > pow_k) {
        ++s.steps;
    }
    p->num_slots = spec_barrier_release_slot(&s) + 1;

    /* at most k - 1 writes and as many waits per step, and 2 more */
    p->ops = calloc(2 * s.steps * (s.radix - 1) + 2, sizeof(*p->ops));
    if (p->ops == NULL) {
        return -1;
    }

    if (rank >= s.loop) {
        spec_barrier_add(p, 1, rank - s.loop, 0);
        spec_barrier_add(p, 0, rank - s.loop, spec_barrier_release_slot(&s));
        return 0;
    }

    if (rank + s.loop < size) {
        spec_barrier_add(p, 0, rank + s.loop, 0);
    }
    for (step = 0, stride = 1; step < s.steps; ++step, stride *= s.radix) {
        spec_barrier_add_step(p, &s, step, stride);
    }
    if (rank + s.loop < size) {
        spec_barrier_add(p, 1, rank + s.loop, spec_barrier_release_slot(&s));
    }
    return 0;
}

void spec_barrier_pattern_free(spec_barrier_pattern_t *p)
{
    free(p->ops);
    p->ops = NULL;
}
