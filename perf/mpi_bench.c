/**
 * ucx-spec: MPI ping-pong latency and windowed streaming bandwidth between
 * two ranks, as an MPI user measures a transport (OSU's osu_latency and
 * osu_bw do the same two things).
 *
 *   lat: rank 0 sends SIZE bytes, rank 1 sends them back; half the round
 *        trip, in microseconds
 *   bw:  rank 0 posts WINDOW sends of SIZE bytes, rank 1 WINDOW receives,
 *        then rank 1 answers with 4 bytes; bytes sent over time, in MB/s
 *   spectrum, spectrum-page: Rashti & Afsahi's buffer-reuse spectrum, the
 *        ping-pong sent from WINDOW buffers (default 100) in turn, buffer i
 *        i times; the buffers back to back, or each on pages of its own;
 *        mean half round trip in microseconds
 *   once: the ping-pong, each message sent from an address not used before
 *        (16 384 of them in turn, four times the hot-buffer table): what a
 *        buffer used once costs to a table keyed by address
 *   fresh: the ping-pong, each message sent from pages no message used
 *        before (so never registered: what a buffer used once costs to a
 *        registration cache), as many messages as fit in MPI_BENCH_FRESH
 *        bytes (default 64 MB) of pages
 *   lat-isend, fresh-isend: the same ping-pongs sent with MPI_Isend and
 *        MPI_Wait (Open MPI's blocking send asks UCP for fast completion,
 *        which changes UCP v2's choice of protocol)
 *
 * Before any timing every buffer's pages are written by the program and
 * by the kernel, and each rank receives every size once unexpectedly and
 * once with its receive posted first (bench_warm.h: one-time costs).  Every
 * size then gets a few untimed iterations, and as many timed ones as fit in
 * a byte budget (MPI_BENCH_BYTES, default 64 MB), at least
 * MIN_ITERS.  The buffers are filled with a
 * pattern and the last message received is checked: a transport that
 * delivers the wrong bytes fails the run instead of reporting a figure.
 *
 * usage: mpi_bench lat|once|fresh|lat-isend|fresh-isend|bw|spectrum|spectrum-page
 *                  SIZE[,SIZE...] [WINDOW]
 * output, rank 0: "<test> <size> <value> <unit>" per size
 *
 * See file LICENSE for terms.
 */

#include "bench_warm.h"

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>


#define MIN_ITERS      3
#define MAX_ITERS      10000
#define WARMUP         2
#define MAX_SIZES      64
#define DEFAULT_WINDOW 64


static size_t byte_budget = 64ul << 20;
static size_t fresh_bytes = 64ul << 20;
static int nonblocking;

static unsigned iterations(size_t size, unsigned per_iter)
{
    size_t n = byte_budget / ((size ? size : 1) * per_iter);

    return (n < MIN_ITERS) ? MIN_ITERS : (n > MAX_ITERS) ? MAX_ITERS :
                                                           (unsigned)n;
}

static void fill(uint8_t *buf, size_t size, unsigned seed)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        buf[i] = (uint8_t)(seed * 31 + i * 7 + 1);
    }
}

static void check(const uint8_t *buf, size_t size, unsigned seed,
                  const char *what)
{
    size_t i;

    for (i = 0; i < size; ++i) {
        if (buf[i] != (uint8_t)(seed * 31 + i * 7 + 1)) {
            fprintf(stderr, "mpi_bench: %s of %zu bytes: byte %zu is wrong\n",
                    what, size, i);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
}

/* Rank 0 sends @a sbuf and receives the answer into @a rbuf; rank 1 answers */
static void round_trip(int rank, const uint8_t *sbuf, uint8_t *rbuf,
                       size_t size, int tag)
{
    int peer = !rank;
    MPI_Request req;

    if (rank == 1) {
        MPI_Recv(rbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
    if (nonblocking) {
        MPI_Isend(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Send(sbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        MPI_Recv(rbuf, size, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    }
}

/* "once": message i leaves from sbuf + (i % ONCE_ADDRS) * ONCE_STEP; the
 * fill pattern repeats every 256 bytes, so each message checks the same */
#define ONCE_STEP  256
#define ONCE_ADDRS 16384

/* Message i leaves from sbuf + (i % naddrs) * stride (stride 0: all from
 * sbuf); with max_n, no more than that many are timed */
static double pingpong(int rank, uint8_t *sbuf, uint8_t *rbuf, size_t size,
                       size_t stride, unsigned naddrs, unsigned max_n)
{
    unsigned n = iterations(size, 2);
    double t0  = 0;
    unsigned i, used;

    if ((max_n != 0) && (n > max_n)) {
        n = max_n;
    }

    used = (naddrs < WARMUP + n) ? naddrs : WARMUP + n;
    fill(sbuf, stride * (used - 1) + size, 1);
    for (i = 0; i < WARMUP + n; ++i) {
        if (i == WARMUP) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        round_trip(rank, sbuf + (size_t)(i % naddrs) * stride, rbuf, size, 1);
    }

    check(rbuf, size, 1, "ping-pong message");
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

/* Each message from pages of their own, mapped for this size alone: none
 * was ever registered (an unmapped region leaves UCX's registration cache) */
static double pingpong_fresh(int rank, uint8_t *rbuf, size_t size, size_t page)
{
    size_t stride   = (size + page - 1) / page * page;
    unsigned naddrs = fresh_bytes / stride;
    uint8_t *span;
    double value;

    if (naddrs <= WARMUP + MIN_ITERS) {
        fprintf(stderr, "mpi_bench: MPI_BENCH_FRESH holds too few %zu-byte "
                        "messages\n", size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    span = mmap(NULL, stride * naddrs, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (span == MAP_FAILED) {
        fprintf(stderr, "mpi_bench: cannot map %zu bytes\n", stride * naddrs);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    value = pingpong(rank, span, rbuf, size, stride, naddrs, naddrs - WARMUP);
    munmap(span, stride * naddrs);
    return value;
}

/* Each rank sends from buffer i of its own set, i times in a row */
static double spectrum(int rank, uint8_t *set, uint8_t *rbuf, size_t size,
                       size_t stride, unsigned nbuf)
{
    unsigned i, j, n = 0;
    double t0;

    for (i = 0; i < nbuf; ++i) {
        fill(set + i * stride, size, 3);
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = MPI_Wtime();
    for (i = 1; i <= nbuf; ++i) {
        for (j = 0; j < i; ++j, ++n) {
            round_trip(rank, set + (i - 1) * stride, rbuf, size, 4);
        }
    }

    check(rbuf, size, 3, "spectrum message");
    return (MPI_Wtime() - t0) * 1e6 / (2.0 * n);
}

static double stream(int rank, uint8_t *sbuf, uint8_t *rbuf, size_t size,
                     unsigned window, MPI_Request *reqs)
{
    unsigned n = iterations(size, window);
    double t0  = 0;
    uint32_t ack;
    unsigned i, w;

    fill(sbuf, size, 2);
    for (i = 0; i < WARMUP + n; ++i) {
        if (i == WARMUP) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
        }
        for (w = 0; w < window; ++w) {
            if (rank == 0) {
                MPI_Isend(sbuf, size, MPI_BYTE, 1, 2, MPI_COMM_WORLD,
                          &reqs[w]);
            } else {
                MPI_Irecv(rbuf + (size_t)w * size, size, MPI_BYTE, 0, 2,
                          MPI_COMM_WORLD, &reqs[w]);
            }
        }
        MPI_Waitall(window, reqs, MPI_STATUSES_IGNORE);
        if (rank == 0) {
            MPI_Recv(&ack, sizeof(ack), MPI_BYTE, 1, 3, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            MPI_Send(&ack, sizeof(ack), MPI_BYTE, 0, 3, MPI_COMM_WORLD);
        }
    }

    if (rank == 1) {
        for (w = 0; w < window; ++w) {
            check(rbuf + (size_t)w * size, size, 2, "streamed message");
        }
    }
    return (double)size * window * n / ((MPI_Wtime() - t0) * 1e6);
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES], max_size = 0;
    unsigned num_sizes = 0, window = DEFAULT_WINDOW, i;
    int rank, nranks, is_lat, is_once, is_fresh, is_spectrum, page_separated;
    long page = sysconf(_SC_PAGESIZE);
    size_t stride = 0, sbuf_length, rbuf_length;
    MPI_Request *reqs;
    uint8_t *sbuf, *rbuf;
    char *list, *tok;
    const char *test;
    double value;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);

    test = (argc > 1) ? argv[1] : "";
    if (!strcmp(test, "lat-isend") || !strcmp(test, "fresh-isend")) {
        nonblocking = 1;
        test        = !strcmp(test, "lat-isend") ? "lat" : "fresh";
    }
    if ((argc < 3) || (nranks != 2) ||
        (strcmp(test, "lat") && strcmp(test, "once") &&
         strcmp(test, "fresh") && strcmp(test, "bw") &&
         strcmp(test, "spectrum") && strcmp(test, "spectrum-page"))) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 mpi_bench "
                            "lat|once|fresh|lat-isend|fresh-isend|bw|"
                            "spectrum|spectrum-page "
                            "SIZE[,SIZE...] "
                            "[WINDOW]\n");
        }
        MPI_Finalize();
        return 2;
    }

    is_once        = !strcmp(test, "once");
    is_fresh       = !strcmp(test, "fresh");
    is_lat         = is_once || is_fresh || !strcmp(test, "lat");
    is_spectrum    = !strncmp(test, "spectrum", 8);
    page_separated = !strcmp(test, "spectrum-page");
    if (is_spectrum) {
        window = 100;
    }
    if (getenv("MPI_BENCH_BYTES") != NULL) {
        byte_budget = strtoul(getenv("MPI_BENCH_BYTES"), NULL, 0);
    }
    if (getenv("MPI_BENCH_FRESH") != NULL) {
        fresh_bytes = strtoul(getenv("MPI_BENCH_FRESH"), NULL, 0);
    }
    if (argc > 3) {
        window = (unsigned)atoi(argv[3]);
    }

    list = strdup(argv[2]);
    for (tok = strtok(list, ","); (tok != NULL) && (num_sizes < MAX_SIZES);
         tok = strtok(NULL, ",")) {
        sizes[num_sizes] = strtoul(tok, NULL, 0);
        if (sizes[num_sizes] > max_size) {
            max_size = sizes[num_sizes];
        }
        ++num_sizes;
    }
    free(list);

    if ((window == 0) || (num_sizes == 0)) {
        if (rank == 0) {
            fprintf(stderr, "mpi_bench: no sizes, or a window of 0\n");
        }
        MPI_Finalize();
        return 2;
    }

    if (is_spectrum) {
        stride = page_separated ? (max_size + page - 1) / page * page :
                                  max_size;
    }
    if (!is_spectrum) {
        sbuf_length = (max_size ? max_size : 1) +
                      (is_once ? (size_t)ONCE_STEP * ONCE_ADDRS : 0);
        sbuf        = malloc(sbuf_length);
    } else {
        sbuf_length = (stride ? stride : 1) * window;
        if (posix_memalign((void**)&sbuf, page, sbuf_length) != 0) {
            sbuf = NULL;
        }
    }
    rbuf_length = (max_size ? max_size : 1) *
                  ((is_lat || is_spectrum) ? 1 : window);
    rbuf        = malloc(rbuf_length);
    reqs        = calloc(window, sizeof(*reqs));
    if ((sbuf == NULL) || (rbuf == NULL) || (reqs == NULL)) {
        fprintf(stderr, "mpi_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    bench_warm_pages(sbuf, sbuf_length);
    bench_warm_pages(rbuf, rbuf_length);
    bench_warm(sbuf, rbuf, sizes, num_sizes);
    for (i = 0; i < num_sizes; ++i) {
        if (is_spectrum) {
            /* back to back: each size packs its buffers tightly */
            value = spectrum(rank, sbuf, rbuf, sizes[i],
                             page_separated ? stride : sizes[i], window);
        } else if (is_fresh) {
            value = pingpong_fresh(rank, rbuf, sizes[i], page);
        } else if (is_lat) {
            value = pingpong(rank, sbuf, rbuf, sizes[i],
                             is_once ? ONCE_STEP : 0, ONCE_ADDRS, 0);
        } else {
            value = stream(rank, sbuf, rbuf, sizes[i], window, reqs);
        }
        if (rank == 0) {
            printf("%s%s %zu %.3f %s\n",
                   is_spectrum ? (page_separated ? "mpi_spectrum_page" :
                                                   "mpi_spectrum") :
                   is_once ? "mpi_once" : is_fresh ? "mpi_fresh" :
                   is_lat ? "mpi_lat" : "mpi_bw",
                   nonblocking ? "_isend" : "", sizes[i], value,
                   (is_lat || is_spectrum) ? "usec" : "MB/s");
            fflush(stdout);
        }
    }

    free(reqs);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return 0;
}
