/*
 * ucx-spec: the speculative rendezvous measured through MPI (BENCHMARKS.md):
 * overlap and progress in both timing scenarios and on both sides, the
 * exchange models of the paper's Fig. 15, and the crossing ping-pong of its
 * Fig. 19.  Two ranks; rank 0 measures and prints CSV rows
 * "test,size,value,unit".  perf/bench-spec runs it for stock UCX and for
 * ucx-spec in turn.
 *
 * Computation is a busy wait on the clock: no MPI call, so no progress.
 * For the exchange models it is a ratio of the stock t_comm, which
 * perf/bench-spec measures first and passes in SPEC_BENCH_TCOMM.  Before
 * any timing each rank receives every size of the mode once unexpectedly
 * and once with its receive posted first (bench_warm.h).  The exchange and
 * crossing loops run for about LOOP_SEC each, however short an iteration.
 *
 * usage: spec_bench overlap|progress|exchange|crossing [quick]
 */

#include "bench_warm.h"

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TAG_DATA 1
#define TAG_GO   2
#define NUM(_a)  (sizeof(_a) / sizeof((_a)[0]))

/* The sizes each mode times, and warms before timing */
static const size_t overlap_sizes[]  = {65536, 262144, 1048576, 4194304};
static const size_t progress_sizes[] = {1048576};
static const size_t exchange_sizes[] = {131072, 1048576};
static const size_t crossing_sizes[] = {1024, 8192, 65536, 1048576};

static int rank, peer;
static int quick;
static uint8_t *sbuf, *rbuf;

/* Both ranks on this machine stall together for 0.1-0.2 ms every few ms,
 * stock UCX alike; in a loop of a few ms one stall more or less moves the
 * mean by several percent, in 0.1 s by a fraction of one */
#define LOOP_SEC 0.1

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void compute(double sec)
{
    double end = now() + sec;

    while (now() < end) {
    }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, n, sizeof(*v), cmp_double);
    return (n % 2) ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Iterations of a loop whose iteration takes about per_iter seconds, the
 * same on both ranks for the same per_iter: at least min, in quick mode min */
static int loop_iters(double per_iter, int min)
{
    double n = LOOP_SEC / per_iter;

    return (quick || (n < min)) ? min : (n > 1e6) ? 1000000 : (int)n;
}

static void go_send(void)
{
    int x = 0;
    MPI_Send(&x, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD);
}

static void go_recv(void)
{
    int x;
    MPI_Recv(&x, 1, MPI_INT, peer, TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/*
 * One timed transfer of len bytes from rank 1 to rank 0 (recv side measured
 * by rank 0) or from rank 0 to rank 1 (send side measured by rank 0), with d
 * seconds of computation between post and wait on the measured side.
 *  rfirst: the receiver posts, then tells the sender to go (a small eager
 *          message, which needs no progress from the receiver afterwards);
 *  sfirst: the sender posts, then tells the receiver, which posts only after
 *          the go, so the RTS has arrived before it.
 * Returns the measured side's post-to-wait-done time.
 */
static double transfer(int measure_recv, int rfirst, size_t len, double d)
{
    int me_recv = (measure_recv == (rank == 0));
    int measured = (rank == 0);
    double t0 = 0, t1;
    MPI_Request req;

    MPI_Barrier(MPI_COMM_WORLD);
    if (me_recv) {
        if (rfirst) {
            t0 = now();
            MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req);
            go_send();
        } else {
            go_recv();
            t0 = now();
            MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req);
        }
    } else {
        if (rfirst) {
            go_recv();
            t0 = now();
            MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req);
        } else {
            t0 = now();
            MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req);
            go_send();
        }
    }

    if (measured) {
        compute(d);
    }
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    t1 = now();
    return t1 - t0;
}

static double timed(int measure_recv, int rfirst, size_t len, double d,
                    int iters)
{
    double *v = malloc(iters * sizeof(*v)), m;
    int i;

    transfer(measure_recv, rfirst, len, d); /* warm-up: learn the envelope */
    for (i = 0; i < iters; ++i) {
        v[i] = transfer(measure_recv, rfirst, len, d);
    }
    m = median(v, iters);
    MPI_Bcast(&m, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    free(v);
    return m;
}

static void row(const char *test, size_t size, double value, const char *unit)
{
    if (rank == 0) {
        printf("%s,%zu,%.3f,%s\n", test, size, value, unit);
        fflush(stdout);
    }
}

/* Overlap (OSU's formula): d >= t_comm, overlap = 1 - (t_total - d) / t_comm */
static void bench_overlap(void)
{
    const size_t *sizes = overlap_sizes;
    int iters = quick ? 10 : 30, side, scen, i;
    char name[64];
    double tc, tt, d, ov;

    for (side = 1; side >= 0; --side) {
        for (scen = 1; scen >= 0; --scen) {
            for (i = 0; i < NUM(overlap_sizes); ++i) {
                if (quick && (sizes[i] != 1048576)) {
                    continue;
                }
                tc = timed(side, scen, sizes[i], 0, iters);
                d  = 1.5 * tc;
                tt = timed(side, scen, sizes[i], d, iters);
                ov = 100.0 * (1.0 - (tt - d) / tc);
                ov = (ov < 0) ? 0 : (ov > 100) ? 100 : ov;
                snprintf(name, sizeof(name), "overlap_%s_%s",
                         side ? "recv" : "send", scen ? "rfirst" : "sfirst");
                row(name, sizes[i], ov, "%");
                snprintf(name, sizeof(name), "t_comm_%s_%s",
                         side ? "recv" : "send", scen ? "rfirst" : "sfirst");
                row(name, sizes[i], tc * 1e6, "usec");
            }
        }
    }
}

/* Progress: the receiver posts first and computes d; how long is the wait,
 * and how much of the payload was there when it began? */
static void bench_progress(void)
{
    static const double factors[] = {0.5, 1, 2, 4};
    const size_t len = progress_sizes[0];
    int iters = quick ? 10 : 30, f, i;
    double tc, d, tw, *wv = malloc(iters * sizeof(double)), inplace;
    MPI_Request req;
    char name[64];
    size_t b, good;

    memset(sbuf, 0x5a, len);
    tc = timed(1, 1, len, 0, iters);
    for (f = 0; f < 4; ++f) {
        d       = factors[f] * tc;
        inplace = 0;
        for (i = 0; i < iters; ++i) {
            memset(rbuf, 0, len);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &req);
                go_send();
                compute(d);
                for (b = 0, good = 0; b < len; ++b) {
                    good += (rbuf[b] == 0x5a);
                }
                inplace += 100.0 * good / len;
                tw = now();
                MPI_Wait(&req, MPI_STATUS_IGNORE);
                wv[i] = now() - tw;
            } else {
                go_recv();
                MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                          &req);
                MPI_Wait(&req, MPI_STATUS_IGNORE);
            }
        }
        snprintf(name, sizeof(name), "progress_wait_d%.1f", factors[f]);
        row(name, len, (rank == 0) ? median(wv, iters) * 1e6 : 0, "usec");
        snprintf(name, sizeof(name), "progress_in_place_d%.1f", factors[f]);
        row(name, len, inplace / iters, "%");
    }
    free(wv);
}

/* Fig. 15: both ranks exchange len bytes per iteration, with computation C
 * = ratio x t_comm split pack 10 %, produce 80 %, consume 10 %.
 *  model 1: irecv, pack, isend, produce, wait, consume
 *  model 2: pack, isend, consume previous, irecv, produce, wait */
static double exchange(int model, size_t len, double c, int iters)
{
    MPI_Status status[2]; /* not MPI_STATUSES_IGNORE: gcc 12 warns of it
                           * through Debian 12's MPICH headers */
    MPI_Request req[2];
    double t0;
    int i;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    for (i = 0; i < iters; ++i) {
        if (model == 1) {
            MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[0]);
            compute(0.1 * c);
            MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[1]);
            compute(0.8 * c);
            MPI_Waitall(2, req, status);
            compute(0.1 * c);
        } else {
            compute(0.1 * c);
            MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[1]);
            compute(0.1 * c);
            MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD,
                      &req[0]);
            compute(0.8 * c);
            MPI_Waitall(2, req, status);
        }
    }
    t0 = (now() - t0) / iters;
    MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t0;
}

/* SPEC_BENCH_TCOMM="size:usec,...": the communication time the computation
 * ratios refer to, measured once with stock UCX by perf/bench-spec */
static double ref_tcomm(size_t size, double measured)
{
    const char *env = getenv("SPEC_BENCH_TCOMM");
    unsigned long sz;
    double us;
    int n;

    while ((env != NULL) && (sscanf(env, "%lu:%lf%n", &sz, &us, &n) == 2)) {
        if (sz == size) {
            return us * 1e-6;
        }
        env += n + (env[n] == ',');
    }

    return measured;
}

static void bench_exchange(void)
{
    static const double ratios[] = {0.1, 0.25, 0.5, 1, 2, 4};
    const size_t *sizes = exchange_sizes;
    int min_iters = quick ? 20 : 100, model, s, r;
    char name[64];
    double tc;

    for (s = 0; s < NUM(exchange_sizes); ++s) {
        tc = exchange(1, sizes[s], 0, min_iters);
        tc = exchange(1, sizes[s], 0, loop_iters(tc, min_iters));
        row("exchange_t_comm", sizes[s], tc * 1e6, "usec");
        /* every variant must compute the same: take the reference t_comm */
        tc = ref_tcomm(sizes[s], tc);
        for (model = 1; model <= 2; ++model) {
            for (r = 0; r < 6; ++r) {
                snprintf(name, sizeof(name), "exchange_m%d_r%.2f", model,
                         ratios[r]);
                row(name, sizes[s],
                    exchange(model, sizes[s], ratios[r] * tc,
                             loop_iters((1 + ratios[r]) * tc, min_iters)) * 1e6,
                    "usec");
            }
        }
    }
}

/* Fig. 19: both ranks post a receive and a send at once, so every RTR meets
 * the peer's RTS (or eager message) on the way */
static double crossing(size_t len, int iters)
{
    MPI_Status status[2];
    MPI_Request req[2];
    double t0;
    int i;

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    for (i = 0; i < iters; ++i) {
        MPI_Irecv(rbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(sbuf, len, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, status);
    }
    t0 = (now() - t0) / iters;
    MPI_Bcast(&t0, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return t0;
}

static void bench_crossing(void)
{
    const size_t *sizes = crossing_sizes;
    int min_iters = quick ? 200 : 2000, s;
    double t;

    for (s = 0; s < NUM(crossing_sizes); ++s) {
        t = crossing(sizes[s], min_iters);
        t = crossing(sizes[s], loop_iters(t, min_iters));
        row("crossing_latency", sizes[s], t * 1e6, "usec");
    }
}

static const struct {
    const char   *name;
    void         (*run)(void);
    const size_t *sizes;
    unsigned     num_sizes;
} modes[] = {
    {"overlap",  bench_overlap,  overlap_sizes,  NUM(overlap_sizes)},
    {"progress", bench_progress, progress_sizes, NUM(progress_sizes)},
    {"exchange", bench_exchange, exchange_sizes, NUM(exchange_sizes)},
    {"crossing", bench_crossing, crossing_sizes, NUM(crossing_sizes)}
};

int main(int argc, char **argv)
{
    unsigned m;
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc < 2) || (size != 2)) {
        if (rank == 0) {
            fprintf(stderr, "usage: spec_bench overlap|progress|exchange|"
                    "crossing [quick]  (2 ranks)\n");
        }
        MPI_Finalize();
        return 2;
    }

    peer  = 1 - rank;
    quick = (argc > 2) && !strcmp(argv[2], "quick");
    sbuf  = malloc(4 << 20);
    rbuf  = malloc(4 << 20);
    bench_warm_pages(sbuf, 4 << 20);
    bench_warm_pages(rbuf, 4 << 20);
    memset(sbuf, 0x5a, 4 << 20);
    memset(rbuf, 0, 4 << 20);

    for (m = 0; (m < NUM(modes)) && strcmp(argv[1], modes[m].name); ++m) {
    }
    if (m < NUM(modes)) {
        bench_warm(sbuf, rbuf, modes[m].sizes, modes[m].num_sizes);
        modes[m].run();
    } else if (rank == 0) {
        fprintf(stderr, "spec_bench: unknown mode %s\n", argv[1]);
    }

    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
