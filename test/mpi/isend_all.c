/**
 * ucx-spec: every rank sends one rendezvous-sized message to every rank,
 * itself included, and takes them with wildcard receives into one buffer:
 * the shape of MPICH's pt2pt/many_isend, which a loopback endpoint's idle
 * copy once broke (issue 28).  Every element is checked against its source.
 *
 * usage: mpirun -np N isend_all [ROUNDS [BYTES]]
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rounds = (argc > 1) ? atoi(argv[1]) : 5;
    int count  = ((argc > 2) ? atoi(argv[2]) : 16384) / (int)sizeof(int);
    int rank, size, r, i, j, errors = 0;
    MPI_Status status, *statuses;
    MPI_Request *reqs;
    int *sbuf, *rbuf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    reqs     = malloc(size * sizeof(*reqs));
    statuses = malloc(size * sizeof(*statuses));
    sbuf = malloc(count * sizeof(int));
    rbuf = malloc(count * sizeof(int));

    for (r = 0; r < rounds; ++r) {
        MPI_Barrier(MPI_COMM_WORLD);
        for (j = 0; j < count; ++j) {
            sbuf[j] = rank * 1000003 + r * 7 + j;
        }
        for (i = 0; i < size; ++i) {
            MPI_Isend(sbuf, count, MPI_INT, i, r, MPI_COMM_WORLD, &reqs[i]);
        }
        for (i = 0; i < size; ++i) {
            for (j = 0; j < count; ++j) {
                rbuf[j] = -1;
            }
            MPI_Recv(rbuf, count, MPI_INT, MPI_ANY_SOURCE, r, MPI_COMM_WORLD,
                     &status);
            for (j = 0; j < count; ++j) {
                if (rbuf[j] != status.MPI_SOURCE * 1000003 + r * 7 + j) {
                    if (errors++ < 3) {
                        fprintf(stderr, "rank %d: round %d, from %d: element "
                                "%d wrong\n", rank, r, status.MPI_SOURCE, j);
                    }
                }
            }
        }
        MPI_Waitall(size, reqs, statuses);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (errors == 0) {
        printf("rank %d: %d rounds from %d ranks verified\n", rank, rounds,
               size);
    }
    free(reqs);
    free(statuses);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return errors != 0;
}
