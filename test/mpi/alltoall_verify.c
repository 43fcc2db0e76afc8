/**
 * ucx-spec: MPI_Alltoall and MPI_Alltoallv that check every byte.
 *
 * Each rank sends every other rank a block whose bytes depend on (sender,
 * receiver, size, iteration, offset); sizes run in powers of two from 1 B to
 * MAX per peer.  Alltoallv then repeats it with a different size per pair.
 * Exits non-zero on the first corrupted byte, naming it.
 *
 * usage: mpirun -np N alltoall_verify [MAX_BYTES [ITERATIONS]]
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static unsigned char pattern(int from, int to, size_t size, int iter,
                             size_t offset)
{
    uint64_t x = ((uint64_t)from << 48) ^ ((uint64_t)to << 32) ^
                 (size * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)iter << 20) ^
                 (offset * 0xBF58476D1CE4E5B9ull);

    x ^= x >> 29;
    return (unsigned char)(x ^ (x >> 13));
}

static int check(const unsigned char *buf, int from, int to, size_t size,
                 int iter, const char *what)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != pattern(from, to, size, iter, i)) {
            fprintf(stderr, "%s: rank %d: byte %zu of %zu from rank %d, "
                    "iteration %d: 0x%02x, expected 0x%02x\n", what, to, i,
                    size, from, iter, buf[i], pattern(from, to, size, iter, i));
            return 1;
        }
    }
    return 0;
}

/* Per-pair size for alltoallv: differs by direction and pair */
static size_t vsize(int from, int to, size_t max)
{
    return (max / (size_t)(1 + (from * 7 + to * 3) % 5)) + (size_t)from;
}

int main(int argc, char **argv)
{
    size_t max   = (argc > 1) ? strtoull(argv[1], NULL, 0) : (1u << 20);
    int    iters = (argc > 2) ? atoi(argv[2]) : 2;
    int rank, nranks, peer, iter, bad = 0;
    int *scounts, *sdispls, *rcounts, *rdispls;
    unsigned char *sbuf, *rbuf;
    size_t size, i, total;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    sbuf    = malloc((max + nranks) * nranks);
    rbuf    = malloc((max + nranks) * nranks);
    scounts = malloc(4 * nranks * sizeof(int));
    sdispls = scounts + nranks;
    rcounts = sdispls + nranks;
    rdispls = rcounts + nranks;
    if ((sbuf == NULL) || (rbuf == NULL) || (scounts == NULL)) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    for (size = 1; (size <= max) && !bad; size *= 2) {
        for (iter = 0; (iter < iters) && !bad; ++iter) {
            for (peer = 0; peer < nranks; ++peer) {
                for (i = 0; i < size; ++i) {
                    sbuf[peer * size + i] = pattern(rank, peer, size, iter, i);
                }
            }
            memset(rbuf, 0, size * nranks);
            MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE,
                         MPI_COMM_WORLD);
            for (peer = 0; (peer < nranks) && !bad; ++peer) {
                bad = check(rbuf + peer * size, peer, rank, size, iter,
                            "alltoall");
            }
        }
    }

    for (iter = 0; (iter < iters) && !bad; ++iter) {
        for (total = 0, peer = 0; peer < nranks; ++peer) {
            scounts[peer] = (int)vsize(rank, peer, max);
            sdispls[peer] = (int)total;
            for (i = 0; i < (size_t)scounts[peer]; ++i) {
                sbuf[total + i] = pattern(rank, peer, scounts[peer], iter, i);
            }
            total += scounts[peer];
        }
        for (total = 0, peer = 0; peer < nranks; ++peer) {
            rcounts[peer] = (int)vsize(peer, rank, max);
            rdispls[peer] = (int)total;
            total        += rcounts[peer];
        }
        memset(rbuf, 0, total);
        MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls,
                      MPI_BYTE, MPI_COMM_WORLD);
        for (peer = 0; (peer < nranks) && !bad; ++peer) {
            bad = check(rbuf + rdispls[peer], peer, rank, rcounts[peer], iter,
                        "alltoallv");
        }
    }

    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if ((rank == 0) && !bad) {
        printf("alltoall_verify: %d ranks, 1 B to %zu B per peer, all bytes "
               "verified\n", nranks, max);
    }

    free(scounts);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return bad;
}
