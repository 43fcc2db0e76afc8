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
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BENCH_WARM_TAG 3 /* no envelope of a timed loop */

/*
 * This machine is a virtual machine in which a process's first access to a
 * page costs a hypervisor exit twice over: once from the process itself
 * (12.8 us a page) and once more from the kernel on its behalf (6.9 us a
 * page, after the process wrote it; 64 MB written twice and then read into
 * from /dev/zero twice: 206-210, 3.0-3.2, 113-114 and 3.2 ms).  A CMA get
 * writes the receiver's buffer through the receiver's kernel; a put from
 * its peer does not.  So a page first reaches the kernel wherever the
 * receiver first copies into it, and when that is depends on who copies:
 * in a window of 64 receives of 256 KB it cost stock UCX one slow first
 * window (0.4-0.7 GB/s) and speculation about 20 slower ones, as the
 * receiver got each buffer for the first time.  Every buffer is therefore
 * written by the program and then by the kernel before any timing, as the
 * pages of a buffer used before are on any machine.  MPI_BENCH_COLD_PAGES=1
 * leaves them alone.
 */
static void bench_warm_pages(void *buf, size_t length)
{
    size_t done = 0;
    ssize_t ret;
    int fd;

    if ((getenv("MPI_BENCH_COLD_PAGES") != NULL) &&
        !strcmp(getenv("MPI_BENCH_COLD_PAGES"), "1")) {
        return;
    }

    memset(buf, 0, length);
    fd = open("/dev/zero", O_RDONLY);
    if (fd < 0) {
        return;
    }

    while (done < length) {
        ret = read(fd, (char*)buf + done, length - done);
        if (ret <= 0) {
            break;
        }
        done += (size_t)ret;
    }
    close(fd);
}

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
