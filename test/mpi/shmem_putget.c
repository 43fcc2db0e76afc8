/**
 * ucx-spec: OpenSHMEM put and get between PEs, every byte checked.
 *
 * Each PE puts a block into its right neighbour's symmetric buffer and gets
 * one back from its left neighbour, for sizes from 1 B to MAX in powers of
 * two.  Exits non-zero on the first corrupted byte.
 *
 * usage: oshrun -np N shmem_putget [MAX_BYTES]
 *
 * See file LICENSE for terms.
 */

#include <shmem.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static unsigned char pattern(int pe, size_t size, int op, size_t offset)
{
    uint64_t x = ((uint64_t)pe << 40) ^ (size * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)op << 62) ^ (offset * 0xBF58476D1CE4E5B9ull);

    x ^= x >> 31;
    return (unsigned char)(x ^ (x >> 11));
}

static int check(const unsigned char *buf, int pe, size_t size, int op,
                 int me, const char *what)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != pattern(pe, size, op, i)) {
            fprintf(stderr, "%s: PE %d: byte %zu of %zu (from PE %d): 0x%02x, "
                    "expected 0x%02x\n", what, me, i, size, pe, buf[i],
                    pattern(pe, size, op, i));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t max = (argc > 1) ? strtoull(argv[1], NULL, 0) : (1u << 20);
    static int bad, all_bad;
    static long psync[SHMEM_REDUCE_SYNC_SIZE];
    static int pwrk[SHMEM_REDUCE_MIN_WRKDATA_SIZE];
    unsigned char *target, *source, *local;
    int me, npes, right, left, i;
    size_t size, k;

    shmem_init();
    me    = shmem_my_pe();
    npes  = shmem_n_pes();
    right = (me + 1) % npes;
    left  = (me + npes - 1) % npes;
    for (i = 0; i < SHMEM_REDUCE_SYNC_SIZE; ++i) {
        psync[i] = SHMEM_SYNC_VALUE;
    }

    target = shmem_malloc(max);
    source = shmem_malloc(max);
    local  = malloc(max);
    if ((target == NULL) || (source == NULL) || (local == NULL)) {
        fprintf(stderr, "PE %d: out of memory\n", me);
        shmem_global_exit(2);
    }

    for (size = 1; (size <= max) && !bad; size *= 2) {
        for (k = 0; k < size; ++k) {
            local[k]  = pattern(me, size, 0, k);
            source[k] = pattern(me, size, 1, k);
        }
        shmem_barrier_all();

        shmem_putmem(target, local, size, right);
        shmem_barrier_all();
        bad = check(target, left, size, 0, me, "put");

        memset(local, 0, size);
        shmem_getmem(local, source, size, left);
        bad |= check(local, left, size, 1, me, "get");
        shmem_barrier_all();
    }

    shmem_int_max_to_all(&all_bad, &bad, 1, 0, 0, npes, pwrk, psync);
    if ((me == 0) && !all_bad) {
        printf("shmem_putget: %d PEs, 1 B to %zu B, all bytes verified\n",
               npes, max);
    }

    free(local);
    shmem_free(source);
    shmem_free(target);
    shmem_finalize();
    return all_bad;
}
