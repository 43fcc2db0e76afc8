/**
 * ucx-spec: senders take turns streaming to rank 0, every byte checked.
 *
 * Rank 0 tells one sender at a time to go; that sender streams COUNT
 * messages of 1 B to 8 KB to it while every other sender waits idle in
 * MPI_Recv.  Turns run 1, 2, ..., N-1, 1, 2, ... for TURNS turns.  Under a
 * specrdv polling set of one ring this is the traffic that makes a receiver
 * take the ring back from the quiet sender and give it to the busy one, and
 * later back again: every message must still arrive once, in order, intact.
 *
 * usage: mpirun -np N turns_verify [COUNT [TURNS]]    (N >= 3)
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SIZE 8192
#define TAG_GO   1
#define TAG_MSG  2


static size_t size_of(int turn, int i)
{
    return 1 + ((size_t)(i * 2654435761u) + (size_t)turn * 97) % MAX_SIZE;
}

static unsigned char pattern(int from, int turn, int i, size_t offset)
{
    return (unsigned char)(from * 131 + turn * 61 + i * 7 + offset * 13 +
                           (offset >> 8));
}

int main(int argc, char **argv)
{
    int count = (argc > 1) ? atoi(argv[1]) : 2000;
    int turns = (argc > 2) ? atoi(argv[2]) : 4;
    static unsigned char buf[MAX_SIZE];
    int rank, nranks, turn, from, i, go, bad = 0;
    size_t size, k;
    MPI_Status status;
    int received;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks < 3) || (count < 1) || (turns < 1)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np N turns_verify [COUNT [TURNS]]"
                    " with N >= 3\n");
        }
        MPI_Finalize();
        return 2;
    }

    for (turn = 0; turn < turns; ++turn) {
        from = 1 + turn % (nranks - 1);
        if (rank == 0) {
            go = turn;
            MPI_Send(&go, 1, MPI_INT, from, TAG_GO, MPI_COMM_WORLD);
            for (i = 0; (i < count) && !bad; ++i) {
                size = size_of(turn, i);
                MPI_Recv(buf, MAX_SIZE, MPI_BYTE, from, TAG_MSG,
                         MPI_COMM_WORLD, &status);
                MPI_Get_count(&status, MPI_BYTE, &received);
                if ((size_t)received != size) {
                    fprintf(stderr, "turn %d: message %d from rank %d has "
                            "%d bytes, expected %zu\n", turn, i, from,
                            received, size);
                    bad = 1;
                }
                for (k = 0; (k < size) && !bad; ++k) {
                    if (buf[k] != pattern(from, turn, i, k)) {
                        fprintf(stderr, "turn %d: byte %zu of message %d "
                                "from rank %d: 0x%02x, expected 0x%02x\n",
                                turn, k, i, from, buf[k],
                                pattern(from, turn, i, k));
                        bad = 1;
                    }
                }
            }
        } else if (rank == from) {
            MPI_Recv(&go, 1, MPI_INT, 0, TAG_GO, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (i = 0; i < count; ++i) {
                size = size_of(turn, i);
                for (k = 0; k < size; ++k) {
                    buf[k] = pattern(from, turn, i, k);
                }
                MPI_Send(buf, (int)size, MPI_BYTE, 0, TAG_MSG, MPI_COMM_WORLD);
            }
        }
        if (bad) {
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        printf("%d ranks, %d turns of %d messages, all bytes verified\n",
               nranks, turns, count);
    }
    MPI_Finalize();
    return 0;
}
