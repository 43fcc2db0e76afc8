/**
 * ucx-spec: the RDMA barrier's operations (barrier/spec_barrier_pattern.c),
 * run for every participant of groups of 1 to 70 with radix 2 to 9 and
 * more than the group: a simulation executes each participant's writes and
 * waits, in a round-robin order and in seeded random orders, over two
 * consecutive barriers so that fast participants enter the second while
 * others are still in the first.
 *
 * Each write carries what its writer knows of who has entered which
 * barrier; a wait that sees the write learns it.  Asserted: nobody waits
 * forever, every participant leaves barrier b knowing that all have entered
 * it, no slot is written twice in one barrier, and every wait is answered
 * by the peer it names.
 *
 * See file LICENSE for terms.
 */

#include "../../barrier/spec_barrier_pattern.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>


#define MAX_SIZE     70
#define BARRIERS     2
#define WORDS        ((MAX_SIZE + 63) / 64)

typedef struct {
    uint64_t bits[BARRIERS][WORDS];   /* who has entered barrier b */
} knowledge_t;

typedef struct {
    spec_barrier_pattern_t pattern;
    unsigned               pc;        /* next operation */
    int                    barrier;   /* 0-based; BARRIERS when done */
    knowledge_t            knows;
    uint64_t               *slot;     /* the highest number written */
    int                    *writer;
    knowledge_t            *carried;  /* what the slot's last write knew */
} participant_t;


static void learn(knowledge_t *k, const knowledge_t *from)
{
    int b, w;

    for (b = 0; b < BARRIERS; ++b) {
        for (w = 0; w < WORDS; ++w) {
            k->bits[b][w] |= from->bits[b][w];
        }
    }
}

static int knows_all(const knowledge_t *k, int b, int size)
{
    int r;

    for (r = 0; r < size; ++r) {
        if (!(k->bits[b][r / 64] & (1ull << (r % 64)))) {
            return 0;
        }
    }
    return 1;
}

/* Runs participant @a r's operations until it must wait; 1 if it moved */
static int run(participant_t *p, int size, int r)
{
    participant_t *me = &p[r];
    int moved         = 0;
    const spec_barrier_op_t *op;
    uint64_t seq;

    while (me->barrier < BARRIERS) {
        seq = me->barrier + 1;
        if (me->pc == 0) {
            me->knows.bits[me->barrier][r / 64] |= 1ull << (r % 64);
        }
        if (me->pc == me->pattern.num_ops) {
            /* leaving: everybody must have entered */
            assert_true(knows_all(&me->knows, me->barrier, size));
            me->pc = 0;
            ++me->barrier;
            moved = 1;
            continue;
        }

        op = &me->pattern.ops[me->pc];
        assert_true((op->peer >= 0) && (op->peer < size) && (op->peer != r));
        assert_true(op->slot < me->pattern.num_slots);
        if (op->write) {
            participant_t *peer = &p[op->peer];

            /* a slot holds one write per barrier */
            assert_true(peer->slot[op->slot] < seq);
            peer->slot[op->slot]    = seq;
            peer->writer[op->slot]  = r;
            peer->carried[op->slot] = me->knows;
        } else {
            if (me->slot[op->slot] < seq) {
                return moved;
            }
            assert_int_equal(me->writer[op->slot], op->peer);
            learn(&me->knows, &me->carried[op->slot]);
        }
        ++me->pc;
        moved = 1;
    }
    return moved;
}

static void simulate(int size, int radix, unsigned seed)
{
    participant_t p[MAX_SIZE];
    int r, done, moved, pick;

    memset(p, 0, sizeof(p));
    for (r = 0; r < size; ++r) {
        assert_int_equal(spec_barrier_pattern_build(&p[r].pattern, r, size,
                                                    radix), 0);
        /* all participants agree on the slots */
        assert_int_equal(p[r].pattern.num_slots, p[0].pattern.num_slots);
        p[r].slot    = calloc(p[r].pattern.num_slots, sizeof(*p[r].slot));
        p[r].writer  = calloc(p[r].pattern.num_slots, sizeof(*p[r].writer));
        p[r].carried = calloc(p[r].pattern.num_slots, sizeof(*p[r].carried));
        assert_non_null(p[r].carried);
    }

    do {
        moved = 0;
        if (seed == 0) {
            for (r = 0; r < size; ++r) {
                moved |= run(p, size, r);
            }
        } else {
            /* random picks, then a sweep, so that a stuck state is seen */
            for (r = 0; r < size; ++r) {
                pick   = rand_r(&seed) % size;
                moved |= run(p, size, pick);
            }
            for (r = 0; r < size; ++r) {
                moved |= run(p, size, r);
            }
        }
    } while (moved);

    for (r = 0, done = 0; r < size; ++r) {
        done += (p[r].barrier == BARRIERS);
    }
    if (done != size) {
        fail_msg("size %d radix %d seed %u: %d of %d participants stuck",
                 size, radix, seed, size - done, size);
    }

    for (r = 0; r < size; ++r) {
        spec_barrier_pattern_free(&p[r].pattern);
        free(p[r].slot);
        free(p[r].writer);
        free(p[r].carried);
    }
}

static void test_every_shape_is_a_barrier(void **state)
{
    unsigned seed;
    int size, radix;

    for (size = 1; size <= MAX_SIZE; ++size) {
        for (radix = 2; radix <= 9; ++radix) {
            for (seed = 0; seed < 4; ++seed) {
                simulate(size, radix, seed);
            }
        }
        simulate(size, MAX_SIZE + 1, 1);
    }
}

/* Radix 2 is the paper's exchange: log2 P writes and waits, and with N not
 * a power of two ceil(log2 N) + 2 steps for the participants beyond P and
 * their proxies */
static void test_radix_2_is_recursive_doubling(void **state)
{
    spec_barrier_pattern_t pat;
    int size, rank, log2p, pof2;

    for (size = 2; size <= MAX_SIZE; ++size) {
        for (pof2 = 1, log2p = 0; pof2 * 2 <= size; pof2 *= 2, ++log2p) {
        }
        for (rank = 0; rank < size; ++rank) {
            assert_int_equal(spec_barrier_pattern_build(&pat, rank, size, 2),
                             0);
            if (rank >= pof2) {
                assert_int_equal(pat.num_ops, 2);          /* in and out */
            } else if (rank + pof2 < size) {
                assert_int_equal(pat.num_ops, 2 * log2p + 2);
            } else {
                assert_int_equal(pat.num_ops, 2 * log2p);
            }
            spec_barrier_pattern_free(&pat);
        }
    }
}

/* Radix k: ceil(log_k N) steps when N is a multiple of a power of k, each
 * of up to k - 1 writes */
static void test_radix_8_takes_fewer_steps(void **state)
{
    spec_barrier_pattern_t pat;
    unsigned i, waits;

    assert_int_equal(spec_barrier_pattern_build(&pat, 0, 64, 8), 0);
    for (i = 0, waits = 0; i < pat.num_ops; ++i) {
        waits += !pat.ops[i].write;
    }
    assert_int_equal(pat.num_ops, 2 * 2 * 7);   /* 2 steps of 7 peers */
    assert_int_equal(waits, 14);
    spec_barrier_pattern_free(&pat);

    /* 16 = 2 x 8: a step of 8, then a step of 2 */
    assert_int_equal(spec_barrier_pattern_build(&pat, 3, 16, 8), 0);
    assert_int_equal(pat.num_ops, 2 * 7 + 2 * 1);
    spec_barrier_pattern_free(&pat);
}

static void test_bad_arguments(void **state)
{
    spec_barrier_pattern_t pat;

    assert_int_equal(spec_barrier_pattern_build(&pat, 0, 4, 1), -1);
    assert_int_equal(spec_barrier_pattern_build(&pat, 4, 4, 2), -1);
    assert_int_equal(spec_barrier_pattern_build(&pat, 0, 0, 2), -1);
    assert_int_equal(spec_barrier_pattern_build(&pat, 0, 1, 2), 0);
    assert_int_equal(pat.num_ops, 0);
    spec_barrier_pattern_free(&pat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_shape_is_a_barrier),
        cmocka_unit_test(test_radix_2_is_recursive_doubling),
        cmocka_unit_test(test_radix_8_takes_fewer_steps),
        cmocka_unit_test(test_bad_arguments),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
