/**
 * ucx-spec: MPI messages into and out of non-contiguous datatypes, every
 * element checked.
 *
 * Rank 0 sends n contiguous elements; rank 1 receives them into a vector
 * (2 elements of every 3), then sends them back out of the vector, and rank
 * 0 receives them contiguous.  MPICH hands such a receive to UCP as a
 * generic datatype whose unpack cannot stop inside an element, so every
 * fragment boundary of every protocol is under test; the sizes cross each
 * threshold of ours (one slot: 8416 B of data) and UCP's.  Elements are
 * MPI_INT and MPI_DOUBLE; the gaps of the vector must stay untouched.
 *
 * usage: mpirun -np 2 dtype_verify
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static const int counts[] = {
    1, 2, 255, 1024, 2048, 2062, 2064, 2103, 2104, 2106, 4096, 4209,
    8192, 16384, 65536, 262144
};

/* element i of message m, as bytes */
static void value(void *v, size_t size, int m, long i)
{
    long x = (long)m * 1000003 + i * 7 + 1;

    if (size == sizeof(int)) {
        *(int*)v = (int)x;
    } else {
        *(double*)v = (double)x;
    }
}

/* errors in n elements of a buffer laid out every `stride` elements in
 * groups of 2 (stride 2: contiguous) and, if gaps, in the gaps */
static long check(const char *buf, size_t size, long n, int stride, int m,
                  const char *what)
{
    char expect[sizeof(double)], gap[sizeof(double)];
    long i, pos, errors = 0;

    memset(gap, 0x5a, sizeof(gap));
    for (i = 0; i < n; ++i) {
        pos = (i / 2) * stride + (i % 2);
        value(expect, size, m, i);
        if (memcmp(buf + pos * size, expect, size) ||
            ((stride == 3) && (i % 2) && memcmp(buf + (pos + 1) * size, gap,
                                                size))) {
            if (errors++ < 3) {
                fprintf(stderr, "%s, %zu B elements, count %ld: element %ld "
                        "wrong\n", what, size, n, i);
            }
        }
    }
    return errors;
}

int main(int argc, char **argv)
{
    MPI_Datatype types[] = {MPI_INT, MPI_DOUBLE};
    long errors = 0, total = 0;
    int rank, m = 0, t, c, n;
    MPI_Datatype vec;
    size_t size;
    char *buf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);

    for (t = 0; t < 2; ++t) {
        size = (t == 0) ? sizeof(int) : sizeof(double);
        for (c = 0; c < (int)(sizeof(counts) / sizeof(counts[0])); ++c, ++m) {
            n   = counts[c] & ~1; /* whole vector blocks */
            n   = (n == 0) ? 2 : n;
            buf = malloc((size_t)(n / 2) * 3 * size);
            MPI_Type_vector(n / 2, 2, 3, types[t], &vec);
            MPI_Type_commit(&vec);
            if (rank == 0) {
                for (long i = 0; i < n; ++i) {
                    value(buf + i * size, size, m, i);
                }
                MPI_Send(buf, n, types[t], 1, m, MPI_COMM_WORLD);
                memset(buf, 0, (size_t)n * size);
                MPI_Recv(buf, n, types[t], 1, m, MPI_COMM_WORLD,
                         MPI_STATUS_IGNORE);
                errors += check(buf, size, n, 2, m, "rank 0, contiguous");
            } else if (rank == 1) {
                memset(buf, 0x5a, (size_t)(n / 2) * 3 * size);
                MPI_Recv(buf, 1, vec, 0, m, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                errors += check(buf, size, n, 3, m, "rank 1, vector");
                MPI_Send(buf, 1, vec, 0, m, MPI_COMM_WORLD);
            }
            total += n;
            MPI_Type_free(&vec);
            free(buf);
        }
    }

    if (errors == 0) {
        printf("rank %d: %ld elements in %d messages each way verified\n",
               rank, total, m);
    }
    MPI_Finalize();
    return errors != 0;
}
