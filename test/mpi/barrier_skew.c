/**
 * ucx-spec: MPI_Barrier under skew, checked.
 *
 * Before each barrier every rank sleeps a random while (up to MAX_US), then
 * adds one to a counter at rank 0 (MPI_Accumulate, flushed); after it, every
 * rank reads the counter: it must be at least size x barriers so far, or a
 * rank left before every rank entered.  Then the same on a communicator
 * split in two (odd and even ranks), and on communicators duplicated and
 * freed in a loop, whose barriers each set up and tear down.
 *
 * usage: mpirun -np N barrier_skew [COUNT [MAX_US [DUPS [skip]]]]
 *   skip: leave the barriers out, so that the check must fail (the test of
 *         the test)
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static int skip_barriers;

static int check_barriers(MPI_Comm comm, int count, int max_us,
                          const char *what)
{
    int64_t *base, one = 1, seen;
    int rank, size, i;
    unsigned seed;
    MPI_Win win;

    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, comm,
                     &base, &win);
    *base = 0;
    MPI_Win_lock_all(0, win);
    MPI_Barrier(comm);          /* the counter is zero before anyone adds */
    seed = 12345u + 7919u * (unsigned)rank;

    for (i = 0; i < count; ++i) {
        if (max_us > 0) {
            usleep(rand_r(&seed) % (unsigned)(max_us + 1));
        }
        MPI_Accumulate(&one, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, MPI_SUM,
                       win);
        MPI_Win_flush(0, win);
        if (!skip_barriers) {
            MPI_Barrier(comm);
        }
        MPI_Get(&seen, 1, MPI_INT64_T, 0, 0, 1, MPI_INT64_T, win);
        MPI_Win_flush(0, win);
        if (seen < (int64_t)size * (i + 1)) {
            fprintf(stderr, "%s: rank %d left barrier %d when %lld of %lld "
                    "arrivals were counted\n", what, rank, i, (long long)seen,
                    (long long)size * (i + 1));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    return 0;
}

int main(int argc, char **argv)
{
    int count  = (argc > 1) ? atoi(argv[1]) : 2000;
    int max_us = (argc > 2) ? atoi(argv[2]) : 20;
    int dups   = (argc > 3) ? atoi(argv[3]) : 50;
    MPI_Comm half, dup;
    int rank, size, i;

    skip_barriers = (argc > 4) && !strcmp(argv[4], "skip");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    check_barriers(MPI_COMM_WORLD, count, max_us, "world");

    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    check_barriers(half, count / 4, max_us, "half");
    MPI_Comm_free(&half);

    for (i = 0; i < dups; ++i) {
        MPI_Comm_dup(MPI_COMM_WORLD, &dup);
        MPI_Barrier(dup);
        MPI_Barrier(dup);
        MPI_Comm_free(&dup);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d ranks: %d barriers under skew, %d on halves, %d "
               "communicators set up and freed: every barrier held\n", size,
               count, count / 4, dups);
    }
    MPI_Finalize();
    return 0;
}
