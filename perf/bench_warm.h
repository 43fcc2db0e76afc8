/*
 * ucx-spec: the untimed start of perf/mpi_bench.c and perf/spec_bench.c.
 *
 * The first message a UCP worker receives before its receive is posted
 * grows UCX's pool of receive buffers (ucp_am_bufs: 0.6-1 ms on this
 * machine, docs/benchmarks.md).  Stock UCX pays it at a program's first
 * unexpected message; speculation's early look at arrived messages, when a
 * receive is posted, can make that first one come in a program whose
 * receives stock UCX always found posted.  Left in, the cost lands in
 * whichever timed loop speculation first does so, as a 20-30 % loss of a
 * short loop, in no figure of stock UCX.  Both variants therefore receive
 * every size once unexpectedly before timing, and then once more with the
 * receive posted first (which takes speculation's RTR path once: its first
 * key packed, its first registration), and the one-time costs are reported
 * on their own, not inside a per-message figure.
 *
 * See file LICENSE for terms.
 */

#ifndef UCX_SPEC_BENCH_WARM_H_
#define UCX_SPEC_BENCH_WARM_H_

#include <mpi.h>
#include <stddef.h>

#define BENCH_WARM_TAG 3 /* no envelope of a timed loop */

/* Two ranks: each receives each size once after its peer sent it, then
 * once with its receive posted before its peer sends */
static void bench_warm(void *sbuf, void *rbuf, const size_t *sizes,
                       unsigned num_sizes)
{
    MPI_Request req;
    unsigned i;
    int rank;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (i = 0; i < num_sizes; ++i) {
        MPI_Isend(sbuf, (int)sizes[i], MPI_BYTE, !rank, BENCH_WARM_TAG,
                  MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Recv(rbuf, (int)sizes[i], MPI_BYTE, !rank, BENCH_WARM_TAG,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    for (i = 0; i < num_sizes; ++i) {
        MPI_Irecv(rbuf, (int)sizes[i], MPI_BYTE, !rank, BENCH_WARM_TAG,
                  MPI_COMM_WORLD, &req);
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Send(sbuf, (int)sizes[i], MPI_BYTE, !rank, BENCH_WARM_TAG,
                 MPI_COMM_WORLD);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

#endif
