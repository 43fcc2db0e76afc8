/**
 * ucx-spec: the hot-buffer usage table (ucp_proto_spec/spec_hotbuf.c): the
 * paper's threshold n > R / (C - V) and its speculative share, when a
 * buffer turns hot, the bounded table and its eviction, and the adaptation
 * that pauses and resumes inserting.
 *
 * See file LICENSE for terms.
 */

#include "../../ucp_proto_spec/spec_hotbuf.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#define CLASSES UCP_PROTO_SPEC_HOTBUF_CLASSES

static char arena[64];

/* Keys only: the table never touches a buffer */
static void *addr(size_t offset)
{
    return (void*)((uintptr_t)arena + offset);
}

/* Scattered buffers, 64-byte aligned: an array's buffers, an arithmetic
 * sequence, spread over Fibonacci hashing's buckets without a collision */
static void *scattered(unsigned i)
{
    uint64_t x = 0x2545f4914f6cdd1dull * (i + 1);

    x ^= x >> 29;
    return addr((x & 0xffffffffffc0ull) + 64 * 1024);
}

/* Every class from 64 B costs R = 58 and C = 3 with V = 2 (any unit):
 * n > 58 / (3 - 2), so n = 59 */
static void set_costs(ucp_proto_spec_hotbuf_t *hb, double reg, double copy,
                      double lookup)
{
    double r[CLASSES], c[CLASSES];
    unsigned i;

    for (i = 0; i < CLASSES; ++i) {
        r[i] = (i >= 6) ? reg : 0;
        c[i] = copy;
    }
    ucp_proto_spec_hotbuf_set_costs(hb, r, c, lookup);
}

static ucp_proto_spec_hotbuf_t *open_table(unsigned capacity, double fraction,
                                           double min_hot)
{
    ucp_proto_spec_hotbuf_t *hb = calloc(1, sizeof(*hb));

    assert_non_null(hb);
    assert_int_equal(ucp_proto_spec_hotbuf_init(hb, capacity, fraction,
                                                min_hot), UCS_OK);
    return hb;
}

static void close_table(ucp_proto_spec_hotbuf_t *hb)
{
    ucp_proto_spec_hotbuf_cleanup(hb);
    free(hb);
}

static void test_threshold_math(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(64, 0.25, 0.2);

    set_costs(hb, 58, 3, 2);
    assert_int_equal(hb->classes[12].n_min, 59);       /* strictly above 58 */
    assert_int_equal(hb->classes[12].register_at, 15); /* ceil(0.25 * 59) */
    assert_int_equal(hb->classes[5].n_min, 0);         /* not measured */
    assert_int_equal(hb->classes[5].register_at, 0);

    set_costs(hb, 60, 3, 1);                           /* 60 / 2 = 30 */
    assert_int_equal(hb->classes[8].n_min, 31);
    assert_int_equal(hb->classes[8].register_at, 8);

    set_costs(hb, 58, 2, 2);                           /* C <= V: never */
    assert_int_equal(hb->classes[12].n_min, 0);
    assert_int_equal(hb->classes[12].register_at, 0);
    set_costs(hb, 58, 1, 2);
    assert_int_equal(hb->classes[12].register_at, 0);

    set_costs(hb, 1, 3, 2);                            /* n = 2 */
    assert_int_equal(hb->classes[12].n_min, 2);
    assert_int_equal(hb->classes[12].register_at, 2);  /* never at first use */
    close_table(hb);

    hb = open_table(64, 1.0, 0.2);
    set_costs(hb, 58, 3, 2);
    assert_int_equal(hb->classes[12].register_at, 59);
    close_table(hb);
}

/* UCX_SPEC_HOTBUF_REUSE: n as given, in the classes given only; costs set
 * before are gone */
static void test_set_reuse(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(64, 0.25, 0.2);

    set_costs(hb, 58, 3, 2);
    ucp_proto_spec_hotbuf_set_reuse(hb, 6, 18, 40);
    assert_int_equal(hb->classes[6].n_min, 40);
    assert_int_equal(hb->classes[18].register_at, 10);
    assert_int_equal(hb->classes[19].register_at, 0);
    assert_int_equal(hb->classes[5].register_at, 0);
    assert_true(hb->classes[12].reg == 0);
    assert_true(hb->lookup == 0);

    ucp_proto_spec_hotbuf_set_reuse(hb, 6, 18, 1);      /* never at first use */
    assert_int_equal(hb->classes[12].register_at, 2);
    assert_false(ucp_proto_spec_hotbuf_use(hb, arena, 4096));
    assert_true(ucp_proto_spec_hotbuf_use(hb, arena, 4096));
    ucp_proto_spec_hotbuf_set_reuse(hb, 6, 18, 0);
    assert_int_equal(hb->classes[12].register_at, 2);
    close_table(hb);
}

static void test_turns_hot(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(64, 0.25, 0.2);
    unsigned i;

    set_costs(hb, 58, 3, 2);
    for (i = 1; i < 15; ++i) {
        assert_false(ucp_proto_spec_hotbuf_use(hb, arena, 4096));
    }
    for (; i < 100; ++i) {
        assert_true(ucp_proto_spec_hotbuf_use(hb, arena, 4096));
    }
    assert_int_equal(hb->cnt.hot, 100 - 15);
    assert_int_equal(hb->cnt.inserts, 1);

    /* the same address with another length is another buffer */
    assert_false(ucp_proto_spec_hotbuf_use(hb, arena, 4000));
    assert_int_equal(hb->cnt.inserts, 2);

    /* a class that never pays takes no lookup */
    assert_false(ucp_proto_spec_hotbuf_use(hb, arena, 32));
    assert_int_equal(hb->cnt.lookups, 100);
    close_table(hb);
}

static void test_used_once_never_hot(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(4096, 0.01, 0.2);
    unsigned i;

    set_costs(hb, 58, 3, 2); /* 1 % of 59 would be the first use */
    for (i = 0; i < 1000; ++i) {
        assert_false(ucp_proto_spec_hotbuf_use(hb, addr(256 * i), 256));
    }
    assert_int_equal(hb->cnt.hot, 0);
    close_table(hb);
}

static void test_bounded_clock(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(50, 0.25, 0); /* never pauses */
    size_t memory               = ucp_proto_spec_hotbuf_memory(hb);
    unsigned i, j;

    assert_int_equal(hb->capacity, 64);
    set_costs(hb, 58, 3, 2);
    for (j = 0; j < 15; ++j) {
        ucp_proto_spec_hotbuf_use(hb, arena, 1024);
    }

    /* a hot buffer used between every two cold ones outlives them all */
    for (i = 1; i <= 1000; ++i) {
        ucp_proto_spec_hotbuf_use(hb, addr(1024 * i), 1024);
        assert_true(ucp_proto_spec_hotbuf_use(hb, arena, 1024));
        assert_true(hb->count <= hb->capacity);
    }
    assert_int_equal(hb->cnt.inserts, 1001);
    assert_int_equal(hb->cnt.evictions, 1001 - 64);
    assert_int_equal(hb->count, 64);
    assert_int_equal(hb->hot_count, 1);
    assert_int_equal(ucp_proto_spec_hotbuf_memory(hb), memory);
    close_table(hb);
}

static void test_adaptation_pauses_and_resumes(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(1024, 0.25, 0.2);
    unsigned i, tracked;

    set_costs(hb, 58, 3, 2);
    /* buffers used once each: none hot, and chains form as the table fills */
    for (i = 0; !hb->paused && (i < 1024); ++i) {
        ucp_proto_spec_hotbuf_use(hb, scattered(i), 512);
    }
    assert_true(hb->paused);
    assert_int_equal(hb->cnt.pauses, 1);
    tracked = hb->count;
    assert_true(tracked < 1024);
    assert_true((tracked - hb->used_buckets) * 8 >= tracked);

    /* paused: nothing new is tracked, a tracked buffer still counts */
    for (i = 0; i < 100; ++i) {
        ucp_proto_spec_hotbuf_use(hb, scattered(2000 + i), 512);
    }
    assert_int_equal(hb->count, tracked);
    assert_int_equal(hb->cnt.skipped, 101);
    for (i = 0; i < 15; ++i) {
        ucp_proto_spec_hotbuf_use(hb, scattered(0), 512);
    }
    assert_int_equal(hb->hot_count, 1);

    /* after a table's worth of misses it resumes with the hot kept */
    for (i = 0; hb->paused && (i < 2000); ++i) {
        ucp_proto_spec_hotbuf_use(hb, scattered(4000 + i), 512);
    }
    assert_false(hb->paused);
    assert_int_equal(hb->cnt.resumes, 1);
    assert_int_equal(hb->count, 1);
    assert_true(ucp_proto_spec_hotbuf_use(hb, scattered(0), 512));
    close_table(hb);
}

static void test_no_pause_when_hot(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(1024, 0.25, 0.2);
    unsigned i;

    set_costs(hb, 1, 3, 2); /* hot at the second use */
    for (i = 0; i < 1000; ++i) {
        ucp_proto_spec_hotbuf_use(hb, scattered(i), 512);
        assert_true(ucp_proto_spec_hotbuf_use(hb, scattered(i), 512));
    }
    assert_int_equal(hb->cnt.pauses, 0);
    assert_int_equal(hb->count, 1000);
    assert_true(hb->count > hb->used_buckets); /* chains did form */
    close_table(hb);
}

static void test_array_spreads(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(1024, 0.25, 0.2);
    unsigned i;

    set_costs(hb, 58, 3, 2);
    for (i = 0; i < 1024; ++i) {
        ucp_proto_spec_hotbuf_use(hb, addr(4096 * i), 2048);
    }
    assert_int_equal(hb->count, 1024);
    assert_int_equal(hb->used_buckets, 1024); /* no chain: one probe each */
    close_table(hb);
}

/* UCP v2's zero-copy: only a buffer's first use is copied, in a class
 * whose costs say one use does not pay R (here every measured class, also
 * where a registration never pays; not where n is 1 or none was given);
 * later uses, and another length at the same address, are counted apart */
static void test_first_use(void **state)
{
    ucp_proto_spec_hotbuf_t *hb = open_table(64, 0.25, 0.2);
    unsigned i;

    set_costs(hb, 58, 3, 2);
    assert_true(ucp_proto_spec_hotbuf_first_use(hb, arena, 4096));
    for (i = 0; i < 20; ++i) {
        assert_false(ucp_proto_spec_hotbuf_first_use(hb, arena, 4096));
    }
    assert_true(ucp_proto_spec_hotbuf_first_use(hb, arena, 2048));
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, arena, 32)); /* no costs */
    assert_int_equal(hb->count, 2);

    set_costs(hb, 58, 1, 2);                   /* C <= V: n never reached */
    assert_true(ucp_proto_spec_hotbuf_first_use(hb, addr(8), 4096));
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(8), 4096));

    set_costs(hb, 0.5, 3, 2);                  /* R + V < C: n = 1 */
    assert_int_equal(hb->classes[12].n_min, 1);
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(16), 4096));

    /* R < C < R + V: n = 3, but one use costs less zero-copy, where v2 pays
     * no V */
    set_costs(hb, 2.5, 3, 2);
    assert_int_equal(hb->classes[12].n_min, 3);
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(20), 4096));
    set_costs(hb, 3, 3, 0);                    /* a tie stays zero-copy */
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(20), 4096));

    ucp_proto_spec_hotbuf_set_reuse(hb, 6, 18, 4); /* a given n */
    assert_true(ucp_proto_spec_hotbuf_first_use(hb, addr(24), 4096));
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(24), 4096));
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(24), 1 << 20));
    ucp_proto_spec_hotbuf_set_reuse(hb, 6, 18, 1);
    assert_false(ucp_proto_spec_hotbuf_first_use(hb, addr(32), 4096));
    close_table(hb);
}

static void test_bad_parameters(void **state)
{
    ucp_proto_spec_hotbuf_t hb;

    assert_int_equal(ucp_proto_spec_hotbuf_init(&hb, 0, 0.25, 0.2),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(ucp_proto_spec_hotbuf_init(&hb, 64, 0, 0.2),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(ucp_proto_spec_hotbuf_init(&hb, 64, 1.5, 0.2),
                     UCS_ERR_INVALID_PARAM);
    assert_int_equal(ucp_proto_spec_hotbuf_init(&hb, 64, 0.25, -1),
                     UCS_ERR_INVALID_PARAM);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threshold_math),
        cmocka_unit_test(test_set_reuse),
        cmocka_unit_test(test_turns_hot),
        cmocka_unit_test(test_used_once_never_hot),
        cmocka_unit_test(test_bounded_clock),
        cmocka_unit_test(test_adaptation_pauses_and_resumes),
        cmocka_unit_test(test_no_pause_when_hot),
        cmocka_unit_test(test_array_spreads),
        cmocka_unit_test(test_first_use),
        cmocka_unit_test(test_bad_parameters),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
