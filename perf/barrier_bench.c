/**
 * ucx-spec: MPI_Barrier latency as an unchanged program sees it: COUNT
 * consecutive barriers after a warm-up, each timed; rank 0 prints the mean
 * and the median of the slowest rank's time per barrier.  Run it with and
 * without LD_PRELOAD=libspec_barrier.*.so to compare with the MPI
 * library's own barrier.
 *
 * With "line", two ranks of one node instead bounce a flag in one cache
 * line of shared memory (MPI_Win_allocate_shared) COUNT times: the round
 * trip a two-process shared-memory barrier cannot beat.
 *
 * usage: barrier_bench [COUNT [line]]
 * output, rank 0: "barrier <ranks> <mean> <median> us"
 *                 or "line_round_trip 2 <mean> <median> us"
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static int cmp(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;

    return (x > y) - (x < y);
}

/* One cache line, rank 0 writes odd numbers, rank 1 answers with the next */
static void line_round_trip(int count, int rank, double *t)
{
    volatile int64_t *line;
    MPI_Aint size;
    MPI_Win win;
    int disp, i;
    double start;

    MPI_Win_allocate_shared(rank == 0 ? 64 : 0, 1, MPI_INFO_NULL,
                            MPI_COMM_WORLD, (void*)&line, &win);
    MPI_Win_shared_query(win, 0, &size, &disp, (void*)&line);
    if (rank == 0) {
        *line = 0;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (i = 0; i < count; ++i) {
        if (rank == 0) {
            start = MPI_Wtime();
            __atomic_store_n(line, 2 * i + 1, __ATOMIC_RELEASE);
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 2 * i + 2) {
            }
            t[i] = (MPI_Wtime() - start) * 1e6;
        } else {
            while (__atomic_load_n(line, __ATOMIC_ACQUIRE) != 2 * i + 1) {
            }
            __atomic_store_n(line, 2 * i + 2, __ATOMIC_RELEASE);
            t[i] = 0;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    int count = (argc > 1) ? atoi(argv[1]) : 10000;
    int line  = (argc > 2) && !strcmp(argv[2], "line");
    double *t, *slowest, start, sum = 0;
    int rank, size, i;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    t       = calloc(count, sizeof(*t));
    slowest = calloc(count, sizeof(*slowest));

    if (line) {
        line_round_trip(count, rank, t);
    } else {
        for (i = 0; i < count / 10 + 10; ++i) {
            MPI_Barrier(MPI_COMM_WORLD);
        }
        for (i = 0; i < count; ++i) {
            start = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            t[i]  = (MPI_Wtime() - start) * 1e6;
        }
    }

    /* a barrier takes as long as its slowest rank saw */
    MPI_Reduce(t, slowest, count, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (i = 0; i < count; ++i) {
            sum += slowest[i];
        }
        qsort(slowest, count, sizeof(*slowest), cmp);
        printf("%s %d %.3f %.3f us\n", line ? "line_round_trip" : "barrier",
               size, sum / count, slowest[count / 2]);
    }
    free(t);
    free(slowest);
    MPI_Finalize();
    return 0;
}
