/**
 * ucx-spec: MPI ping-pong that checks every byte it receives.
 *
 * Rank 0 sends a buffer whose every byte depends on (size, iteration,
 * direction, offset); rank 1 checks it and answers with the pattern of the
 * other direction, which rank 0 checks.  Sizes are every power of two from
 * 1 B to MAX and odd sizes between them, so eager, rendezvous and the
 * threshold between them are all crossed.  Exits non-zero on the first
 * corrupted byte, naming it.
 *
 * usage: mpirun -np 2 pingpong_verify [MAX_BYTES [ITERATIONS]]
 *   PINGPONG_VERIFY_CORRUPT=1 makes rank 1 flip one byte of its last reply,
 *   so that a test can show the check catches it.
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static unsigned char pattern(size_t size, int iter, int dir, size_t offset)
{
    uint64_t x = (size * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)iter << 32) ^
                 ((uint64_t)dir << 63) ^ (offset * 0xBF58476D1CE4E5B9ull);

    x ^= x >> 31;
    return (unsigned char)(x ^ (x >> 17));
}

static void fill(unsigned char *buf, size_t size, int iter, int dir)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        buf[i] = pattern(size, iter, dir, i);
    }
}

static int check(const unsigned char *buf, size_t size, int iter, int dir,
                 int rank)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != pattern(size, iter, dir, i)) {
            fprintf(stderr, "rank %d: size %zu iteration %d: byte %zu is 0x%02x, "
                    "expected 0x%02x\n", rank, size, iter, i, buf[i],
                    pattern(size, iter, dir, i));
            return 1;
        }
    }
    return 0;
}

int main(int argc, char **argv)
{
    size_t max   = (argc > 1) ? strtoull(argv[1], NULL, 0) : (8u << 20);
    int    iters = (argc > 2) ? atoi(argv[2]) : 3;
    size_t sizes[128], size, verified = 0;
    int corrupt  = (getenv("PINGPONG_VERIFY_CORRUPT") != NULL);
    int rank, nranks, nsizes = 0, s, iter, bad = 0;
    unsigned char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if (nranks != 2) {
        if (rank == 0) {
            fprintf(stderr, "pingpong_verify: needs exactly 2 ranks\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (size = 1; size <= max; size *= 2) {
        sizes[nsizes++] = size;
        if ((size >= 4) && (size * 3 / 2 + 1 <= max)) {
            sizes[nsizes++] = size * 3 / 2 + 1;   /* odd, between powers */
        }
    }

    buf = malloc(max);
    if (buf == NULL) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (s = 0; (s < nsizes) && !bad; ++s) {
        size = sizes[s];
        for (iter = 0; iter < iters; ++iter) {
            if (rank == 0) {
                fill(buf, size, iter, 0);
                MPI_Send(buf, (int)size, MPI_BYTE, 1, s, MPI_COMM_WORLD);
                memset(buf, 0, size);
                MPI_Recv(buf, (int)size, MPI_BYTE, 1, s, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                bad |= check(buf, size, iter, 1, rank);
            } else {
                memset(buf, 0, size);
                MPI_Recv(buf, (int)size, MPI_BYTE, 0, s, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                bad |= check(buf, size, iter, 0, rank);
                fill(buf, size, iter, 1);
                if (corrupt && (s == nsizes - 1) && (iter == iters - 1)) {
                    buf[size / 2] ^= 0x01;
                }
                MPI_Send(buf, (int)size, MPI_BYTE, 0, s, MPI_COMM_WORLD);
            }
            verified += size;
        }
        /* both ranks run every iteration of a size, then stop together */
        MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    }

    if (!bad) {
        printf("pingpong_verify: rank %d verified %zu bytes in %d sizes "
               "(1 B to %zu B) x %d iterations\n", rank, verified, nsizes,
               max, iters);
    }
    free(buf);
    MPI_Finalize();
    return bad;
}
