/*
 * ucx-spec: MPI stress of the speculative rendezvous.
 *
 * Ranks work in pairs (0-1, 2-3, ...), both directions at once.  Each round
 * one side sends a random sequence of messages (four tags, sizes from 1 B to
 * 4x the rendezvous threshold) and the other posts one receive per message in
 * the same order, each at random fully specified, MPI_ANY_SOURCE or
 * MPI_ANY_TAG, exactly sized or larger.  With a single sender per receiver
 * and receives posted in message order, MPI's matching rules give receive i
 * message i whatever the timing, so every receive is checked for its size,
 * its tag, its position in the order and every byte.  Each round, at random,
 * the receiver or the sender arrives late (a busy wait with no MPI call),
 * and the receiver cancels a receive that an RTR may already name before
 * the sender is allowed to send its message.
 *
 * usage: spec_stress MESSAGES [SEED]     (MESSAGES per direction per pair)
 * Env: SPEC_STRESS_THRESH (bytes, default 16384): the rendezvous threshold
 * the sizes straddle; set UCX_RNDV_THRESH to the same.  SPEC_STRESS_CORRUPT:
 * rank 0 flips a byte it sends, which must fail the run.
 */

#include <mpi.h>

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTAGS      4
#define TAG_CANCEL 50      /* the cancelled receive's tag */
#define TAG_GO     51      /* "your cancel is done, send" */
#define ROUND_MAX  16

typedef struct {
    uint64_t state;
} rng_t;

static uint64_t rnd(rng_t *r)
{
    /* splitmix64: both sides draw the same sequence from the same seed */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void fill(uint8_t *buf, size_t len, uint64_t seq)
{
    size_t i;

    for (i = 0; i < len; ++i) {
        buf[i] = (uint8_t)((seq * 2654435761u) + i * 31 + (i >> 9));
    }
}

static void spin_us(unsigned us)
{
    double end = MPI_Wtime() + us * 1e-6;

    while (MPI_Wtime() < end) {
    }
}

static int fail(int rank, const char *what, uint64_t seq)
{
    fprintf(stderr, "rank %d: message %" PRIu64 ": %s\n", rank, seq, what);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
}

/* Where @a got differs from @a expect: which bytes, and whether they were
 * ever written (0xee is the receive buffer's fill), for the report */
static void diff_report(int rank, const uint8_t *got, const uint8_t *expect,
                        size_t len)
{
    size_t i, first = len, last = 0, n = 0, unwritten = 0;

    for (i = 0; i < len; ++i) {
        if (got[i] != expect[i]) {
            first      = (n == 0) ? i : first;
            last       = i;
            unwritten += (got[i] == 0xee);
            ++n;
        }
    }

    fprintf(stderr, "rank %d: %zu of %zu bytes differ, offsets %zu..%zu, "
            "%zu of them never written\n", rank, n, len, first, last,
            unwritten);
}

typedef struct {
    size_t len;
    int    tag;
    int    kind;     /* receive: 0 specific, 1 any source, 2 any tag */
    size_t buflen;
} plan_t;

static size_t pick_size(rng_t *r, size_t thresh)
{
    switch (rnd(r) % 4) {
    case 0:  return 1 + rnd(r) % 1024;                     /* small eager */
    case 1:  return thresh / 2 + rnd(r) % thresh;          /* straddling */
    case 2:  return thresh + rnd(r) % (3 * thresh);        /* rendezvous */
    default: return thresh - 64 + rnd(r) % 128;            /* at the edge */
    }
}

int main(int argc, char **argv)
{
    uint64_t total, seed, sent = 0, received = 0, cancels = 0, seq_tx = 0,
             seq_rx = 0;
    size_t thresh = getenv("SPEC_STRESS_THRESH") ?
                    strtoul(getenv("SPEC_STRESS_THRESH"), NULL, 0) : 16384;
    size_t maxlen = 4 * thresh + 64;
    MPI_Request sreq[ROUND_MAX], rreq[ROUND_MAX], creq, greq;
    uint8_t *sbuf[ROUND_MAX], *rbuf[ROUND_MAX], *expect, *cbuf;
    plan_t plan[ROUND_MAX];
    int rank, size, peer, i, n, flag, go = 1;
    MPI_Status st;
    rng_t tx, rx, me;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc < 2) || (size % 2)) {
        if (rank == 0) {
            fprintf(stderr, "usage: spec_stress MESSAGES [SEED], even ranks\n");
        }
        MPI_Finalize();
        return 2;
    }

    total = strtoull(argv[1], NULL, 0);
    seed  = (argc > 2) ? strtoull(argv[2], NULL, 0) : (uint64_t)time(NULL);
    MPI_Bcast(&seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    peer = rank ^ 1;

    /* tx draws what we send, rx what the peer sends; me our own timing */
    tx.state = seed * 1000 + rank;
    rx.state = seed * 1000 + peer;
    me.state = seed * 7777 + rank;

    for (i = 0; i < ROUND_MAX; ++i) {
        sbuf[i] = malloc(maxlen);
        rbuf[i] = malloc(maxlen + 4096);
    }
    expect = malloc(maxlen);
    cbuf   = malloc(maxlen);

    while ((sent < total) || (received < total)) {
        /* the plan of both directions, known to both sides */
        n = 1 + rnd(&tx) % ROUND_MAX;
        for (i = 0; i < n; ++i) {
            plan[i].len = pick_size(&tx, thresh);
            plan[i].tag = rnd(&tx) % NTAGS;
            fill(sbuf[i], plan[i].len, seq_tx + i);
        }

        /* the check itself: one flipped byte must fail the run */
        if (getenv("SPEC_STRESS_CORRUPT") && (rank == 0) && (seq_tx > 100)) {
            sbuf[n - 1][plan[n - 1].len / 2] ^= 1;
        }

        /* sender late or receiver late, 0-200 us, no MPI call meanwhile */
        if (rnd(&me) % 2) {
            spin_us(rnd(&me) % 200);
        }

        for (i = 0; i < n; ++i) {
            MPI_Isend(sbuf[i], plan[i].len, MPI_BYTE, peer, plan[i].tag,
                      MPI_COMM_WORLD, &sreq[i]);
        }

        {
            plan_t rplan[ROUND_MAX];
            int m = 1 + rnd(&rx) % ROUND_MAX, j, src, tag;

            for (j = 0; j < m; ++j) {
                rplan[j].len  = pick_size(&rx, thresh);
                rplan[j].tag  = rnd(&rx) % NTAGS;
                rplan[j].kind = rnd(&me) % 3;
                rplan[j].buflen = (rnd(&me) % 2) ? rplan[j].len :
                                  rplan[j].len + rnd(&me) % 4096;
                src = (rplan[j].kind == 1) ? MPI_ANY_SOURCE : peer;
                tag = (rplan[j].kind == 2) ? MPI_ANY_TAG : rplan[j].tag;
                memset(rbuf[j], 0xee, rplan[j].buflen);
                MPI_Irecv(rbuf[j], rplan[j].buflen, MPI_BYTE, src, tag,
                          MPI_COMM_WORLD, &rreq[j]);
                if (rnd(&me) % 4 == 0) {
                    spin_us(rnd(&me) % 50); /* compute between posts */
                }
            }

            /* a receive the peer's send of TAG_CANCEL would match, and an
             * RTR may already name: cancel it before that send is allowed */
            MPI_Irecv(cbuf, maxlen, MPI_BYTE, peer, TAG_CANCEL, MPI_COMM_WORLD,
                      &creq);
            MPI_Cancel(&creq);
            MPI_Wait(&creq, &st);
            MPI_Test_cancelled(&st, &flag);
            if (!flag) {
                fail(rank, "cancel of a receive with no message failed",
                     seq_rx);
            }
            ++cancels;

            for (j = 0; j < m; ++j) {
                int count;

                MPI_Wait(&rreq[j], &st);
                MPI_Get_count(&st, MPI_BYTE, &count);
                if ((size_t)count != rplan[j].len) {
                    fail(rank, "wrong length (order broken?)", seq_rx + j);
                }
                if (st.MPI_TAG != rplan[j].tag) {
                    fail(rank, "wrong tag (order broken?)", seq_rx + j);
                }
                if (st.MPI_SOURCE != peer) {
                    fail(rank, "wrong source", seq_rx + j);
                }
                fill(expect, rplan[j].len, seq_rx + j);
                if (memcmp(rbuf[j], expect, rplan[j].len) != 0) {
                    diff_report(rank, rbuf[j], expect, rplan[j].len);
                    fail(rank, "corrupt bytes", seq_rx + j);
                }
                for (size_t b = rplan[j].len; b < rplan[j].buflen; ++b) {
                    if (rbuf[j][b] != 0xee) {
                        fail(rank, "bytes written beyond the message",
                             seq_rx + j);
                    }
                }
            }
            seq_rx   += m;
            received += m;
        }

        for (i = 0; i < n; ++i) {
            MPI_Wait(&sreq[i], MPI_STATUS_IGNORE);
        }
        seq_tx += n;
        sent   += n;

        /* the cancelled receive's message: a fresh receive takes it, the
         * first message of that tag after the cancel (learned envelope) */
        MPI_Irecv(cbuf, maxlen, MPI_BYTE, peer, TAG_CANCEL, MPI_COMM_WORLD,
                  &creq);
        MPI_Sendrecv(&go, 1, MPI_INT, peer, TAG_GO, &flag, 1, MPI_INT, peer,
                     TAG_GO, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fill(sbuf[0], thresh * 2, ~seq_tx);
        MPI_Isend(sbuf[0], thresh * 2, MPI_BYTE, peer, TAG_CANCEL,
                  MPI_COMM_WORLD, &greq);
        MPI_Wait(&creq, &st);
        MPI_Wait(&greq, MPI_STATUS_IGNORE);
        fill(expect, thresh * 2, ~seq_rx);
        if (memcmp(cbuf, expect, thresh * 2) != 0) {
            fail(rank, "corrupt bytes after a cancel", seq_rx);
        }
    }

    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d: %" PRIu64 " messages sent, %" PRIu64 " received and "
           "verified, %" PRIu64 " cancels, seed %" PRIu64 "\n", rank, sent,
           received, cancels, seed);

    for (i = 0; i < ROUND_MAX; ++i) {
        free(sbuf[i]);
        free(rbuf[i]);
    }
    free(expect);
    free(cbuf);
    MPI_Finalize();
    return 0;
}
