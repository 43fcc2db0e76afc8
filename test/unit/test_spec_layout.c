/**
 * ucx-spec: MPICH's tag layout recognised from its MPI_Get_library_version
 * (ucp_proto_spec/spec_layout.c), and everything else refused.  The version
 * strings are Debian 12's and Debian 13's MPICH, as the libraries print them
 * (their configure lines shortened).
 *
 * See file LICENSE for terms.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <cmocka.h>

#include <ucp/spec/spec_int.h>

#define MPICH_402 \
    "MPICH Version:\t4.0.2\n" \
    "MPICH Release date:\tThu Apr  7 12:34:45 CDT 2022\n" \
    "MPICH ABI:\t14:2:2\n" \
    "MPICH Device:\tch4:ucx\n" \
    "MPICH configure:\t--build=x86_64-linux-gnu --prefix=/usr " \
    "--with-device=ch4:ucx --with-pm=hydra --enable-shared%s\n" \
    "MPICH CC:\tgcc -g -O2\n"

#define MPICH_421 \
    "MPICH Version:      4.2.1\n" \
    "MPICH Release date: Wed Apr 17 15:30:02 CDT 2024\n" \
    "MPICH ABI:          16:1:4\n" \
    "MPICH Device:       ch4:ucx\n" \
    "MPICH configure:    --build=x86_64-linux-gnu --prefix=/usr " \
    "--with-device=ch4:ucx --with-pm=hydra%s\n" \
    "MPICH CC:           gcc -g -O2\n"

static int parse(const char *format, const char *extra, uint64_t *sender,
                 uint64_t *ignore)
{
    char version[4096];

    snprintf(version, sizeof(version), format, extra);
    *sender = *ignore = 0xdead;
    return ucp_proto_spec_layout_parse(version, sender, ignore);
}

/* the masks README gave by hand for MPICH 4.0, derived again */
static void test_debian_mpich(void **state)
{
    uint64_t sender, ignore;

    assert_true(parse(MPICH_402, "", &sender, &ignore));
    assert_int_equal(sender, 0x0000ffff00000000ull);
    assert_int_equal(ignore, 0x60000000ull);

    assert_true(parse(MPICH_421, "", &sender, &ignore));
    assert_int_equal(sender, 0x0000ffff00000000ull);
    assert_int_equal(ignore, 0x60000000ull);
}

/* configure-time layouts: 20 rank bits leave a 28-bit MPI tag */
static void test_rank_bits(void **state)
{
    uint64_t sender, ignore;

    assert_true(parse(MPICH_421, " --with-ch4-ucx-rankbits=20", &sender,
                      &ignore));
    assert_int_equal(sender, 0x0000fffff0000000ull);
    assert_int_equal(ignore, 0x0c000000ull);

    assert_false(parse(MPICH_421, " --with-ch4-ucx-rankbits=x", &sender,
                       &ignore));
    assert_false(parse(MPICH_421, " --with-ch4-ucx-rankbits=40", &sender,
                       &ignore));
}

/* whatever was not read in MPICH's source is refused, never guessed */
static void test_unknown_refused(void **state)
{
    uint64_t sender, ignore;

    assert_false(parse(MPICH_421, " --disable-tag-error-bits", &sender,
                       &ignore));
    assert_false(parse(MPICH_402, " --enable-tag-error-bits=no", &sender,
                       &ignore));
    /* 4.3 reserves a protocol bit */
    assert_false(parse("MPICH Version: 4.3.0\nMPICH Device: ch4:ucx\n"
                       "MPICH configure: %s\n", "", &sender, &ignore));
    assert_false(parse("MPICH Version: 3.4.3\nMPICH Device: ch4:ucx\n"
                       "MPICH configure: %s\n", "", &sender, &ignore));
    assert_false(parse("MPICH Version: 4.2.1\nMPICH Device: ch4:ofi\n"
                       "MPICH configure: %s\n", "", &sender, &ignore));
    assert_false(parse("MPICH Version: 4.2.1\nMPICH Device: ch4:ucx\n%s", "",
                       &sender, &ignore));
    assert_false(parse("Open MPI v5.0.7, package: Debian OpenMPI%s\n", "",
                       &sender, &ignore));
    assert_false(parse("%s", "", &sender, &ignore));
    assert_int_equal(sender, 0xdead); /* nothing written */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_debian_mpich),
        cmocka_unit_test(test_rank_bits),
        cmocka_unit_test(test_unknown_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
