/*
 * ucx-spec: model of one specrdv connection whose ring the receiver may take
 * back (uct_specrdv/specrdv_conn.c), checked with spin by test/model/run.
 *
 * One sender S sends K active messages to one receiver R.  Each goes through
 * the ring when S holds it and has a credit, else through the fallback FIFO;
 * every message of either channel, control messages included, takes the
 * connection's next PSN.  S may claim the ring when it is free (and says so
 * with RING), or be refused while another sender O holds it (and says so
 * with RING_WANTED, which the implementation sends when the fallback channel
 * has room, now or at a later progress call).  R may revoke S's ring at any
 * time, which covers every RING_WANTED it could act on, whenever it arrives
 * (RING_REVOKE on the reverse channel); S stops
 * writing it and answers RING_RELEASED; R closes the ring when it delivers
 * RELEASED, blanks it and frees it, and S may claim it again.  S may also
 * die at any point; R takes a revoked ring back without RELEASED only once
 * the writer says S is gone (peer_alive), and then expects no more from S.
 * With ASYNC_GRANT (the verbs writer) S does not claim the ring: it asks
 * (REQ, through the fallback FIFO), R opens the ring when it delivers REQ
 * and writes its answer into S's memory, and S learns of the grant only when
 * it next looks.  R may revoke the ring before S has looked: S must then
 * void that grant (not write the ring, count it among its rings) and answer
 * RELEASED all the same.  A ring write
 * lands whole (partial landing is the slot protocol's, tested in
 * test_specrdv_slot); R frees each slot at once and pushes its tail.  R's
 * tail also rides back on messages of the reverse direction (TAIL), stamped
 * with how many rings R has opened for S; S applies one only while that is
 * how many rings it has claimed, so a tail of a ring R took back, arriving
 * after S claimed the next, gives no credit.
 *
 * With FB_WINDOW (the verbs writer's shared receive queue) S may have at
 * most W fallback messages that R has not delivered: it waits, reading the
 * count R pushed, when it has W.  R pushes its count once it delivered W / 2
 * more, now or, when the writer has no room, at a later step.  The FIFO
 * holds only W messages: a send that found it full would be the RNR wait
 * the window exists to avoid.
 *
 * Checked:
 *  - every active message is delivered once, in order (assertions);
 *  - the ring is drained when R frees it: no write is lost, and S never
 *    writes a ring it no longer holds, nor a slot R has not read;
 *  - no deadlock: both sides finish (spin's invalid end states).
 *
 * Seeded faults, each of which must make the check fail (test/model/run):
 *  WRITE_AFTER_RELEASE  S goes on writing the ring after it released it
 *  CLOSE_AT_REVOKE      R frees the ring when it revokes it, not at RELEASED
 *  RELEASED_NOW         R takes RELEASED without waiting for its PSN's turn
 *  RECLAIM_ALIVE        R takes a revoked ring back from a live S
 *  NO_EPOCH             S applies a piggybacked tail whatever ring it counts
 *  NO_VOID              (ASYNC_GRANT) S uses a grant revoked before it looked
 *  NO_WINDOW            (FB_WINDOW) S sends whatever R has not delivered
 *  NO_PUSH_RETRY        (FB_WINDOW) a push without room is never made
 */

#ifndef K
#define K 4           /* active messages */
#endif
#define SLOTS 2
#define FB    2
#define EMPTY 255
#define WANTS 2       /* refusals S reports, and */
#define REVOKES 2     /* revokes R makes, and */
#define TAILS 2       /* tails it piggybacks, to bound the state space */

mtype = { AM, RING, WANTED, RELEASED, REVOKE, TAIL, REQ };

#ifdef FB_WINDOW
#define W 2
#define PUSHED !push_due
byte fb_pub = 0;           /* R's count of S's delivered fallback messages,
                              as last pushed */
#else
#define PUSHED 1
#endif

chan fb  = [FB] of { mtype, byte, byte };   /* type, PSN, message number */
chan rev = [2] of { mtype, byte, byte };    /* type, tail, epoch */

byte slot_psn[SLOTS];      /* the receiver's ring as landed */
byte slot_am[SLOTS];
byte ring_owner   = 0;     /* 1: S holds the ring */
byte rx_tail_pub  = 0;     /* R's tail as last pushed to S */
bool ring_open    = 0;     /* in R's polling set */
byte ring_written = 0;     /* writes and deliveries under this ownership */
byte ring_read    = 0;
byte am_delivered = 0;
bool revoking     = 0;
bool rx_done      = 0;
bool s_dead       = 0;
byte rx_epoch     = 0;     /* rings R has opened for S */
byte answer       = 0;     /* ASYNC_GRANT: R's answer in S's memory:
                              0 none, 1 granted, 2 refused */

inline ring_free() {
    atomic {
        slot_psn[0]  = EMPTY;
        slot_psn[1]  = EMPTY;
        ring_written = 0;
        ring_read    = 0;
        rx_tail_pub  = 0;
        ring_open    = 0;
        ring_owner   = 0
    }
}

/* S's fallback send: within the window, into a FIFO with room */
#ifdef FB_WINDOW
inline fb_send(type, p, n) {
#ifndef NO_WINDOW
    do
    :: fb_sent - fb_acked < W -> break
    :: (fb_sent - fb_acked >= W) && (fb_pub != fb_acked) -> fb_acked = fb_pub
    od;
#endif
    assert(nfull(fb));
    fb!type(p, n);
    fb_sent++
}
#else
inline fb_send(type, p, n) {
    fb!type(p, n)
}
#endif

proctype S()
{
    byte psn = 0, am = 0, head = 0, tail = 0, wants = 0, epoch = 0, t, e;
    byte fb_sent = 0, fb_acked = 0;
    bool has_ring = 0, waiting = 0, voided = 0;

    do
    :: (am < K) && has_ring ->
        /* the explicit update is read only when the credits run out */
        if
        :: (head - tail == SLOTS) && (rx_tail_pub >= tail) &&
           (rx_tail_pub <= head) -> tail = rx_tail_pub
        :: else -> skip
        fi;
        if
        :: head - tail < SLOTS ->
            atomic {
                assert(ring_owner == 1);     /* never into a ring not ours */
                assert(slot_psn[head % SLOTS] == EMPTY); /* nor over a message */
                slot_psn[head % SLOTS] = psn;
                slot_am[head % SLOTS]  = am;
                head++; psn++; am++;
                ring_written++
            }
        :: else ->                       /* no credit: fall back */
            fb_send(AM, psn, am); psn++; am++
        fi
    :: (am < K) && !has_ring ->
        fb_send(AM, psn, am); psn++; am++
#ifndef ASYNC_GRANT
    :: (am < K) && !has_ring && (wants < WANTS) ->
        if
        :: atomic { ring_owner == 0 -> ring_owner = 1 };
            fb_send(RING, psn, 0); psn++;
            has_ring = 1; head = 0; tail = 0; epoch++
        :: atomic { ring_owner != 0 -> skip };
            fb_send(WANTED, psn, 0); psn++; wants++
        fi
#else
    :: (am < K) && !has_ring && !waiting && (wants < WANTS) ->
        fb_send(REQ, psn, 0); psn++; waiting = 1
    :: waiting && (answer != 0) ->
        if
        :: answer == 2 ->
            fb_send(WANTED, psn, 0); psn++; wants++
#ifdef NO_VOID
        :: answer == 1 ->
#else
        :: (answer == 1) && !voided ->
#endif
            has_ring = 1; head = 0; tail = 0; epoch++
#ifndef NO_VOID
        :: (answer == 1) && voided -> epoch++
#endif
        fi;
        answer = 0; waiting = 0; voided = 0
#endif
    :: rev?TAIL, t, e ->
#ifdef NO_EPOCH
        if
        :: has_ring && (t >= tail) && (t <= head) -> tail = t
#else
        if
        :: has_ring && (e == epoch) && (t >= tail) && (t <= head) -> tail = t
#endif
        :: else -> skip
        fi
    :: rev?REVOKE, _, _ ->
#ifndef WRITE_AFTER_RELEASE
        has_ring = 0;
#endif
        voided = waiting;
        fb_send(RELEASED, psn, 0); psn++
    :: (am == K) && rx_done -> break
    :: s_dead = 1; break                 /* killed: writes and answers nothing */
    od
}

proctype R()
{
    byte esn = 0, rx_head = 0, revokes = 0, tails = 0;
    bool failed = 0;     /* S's connection failed: its messages are dropped */
#ifdef FB_WINDOW
    byte fb_done = 0;
    bool push_due = 0;
#endif
    mtype t;
    byte p, a;

    do
    :: atomic { ring_open && (slot_psn[rx_head % SLOTS] == esn) ->
        assert(slot_am[rx_head % SLOTS] == am_delivered);
        am_delivered++; esn++;
        slot_psn[rx_head % SLOTS] = EMPTY;
        rx_head++; ring_read++;
        rx_tail_pub = rx_head }
    /* with room left for a REVOKE, which S may never read */
    :: atomic { ring_open && (tails < TAILS) && empty(rev) ->
                rev!TAIL, rx_head, rx_epoch; tails++ }
    :: atomic { ring_open && (ring_owner == 1) && !revoking &&
                (revokes < REVOKES) -> revoking = 1; revokes++ };
        rev!REVOKE, 0, 0;
#ifdef CLOSE_AT_REVOKE
        ring_free()
#endif
#ifdef RELEASED_NOW
    :: atomic { fb?<RELEASED, p, a> -> esn = p };
#endif
    /* An early message is held: only the expected PSN is taken, and a
     * message that never comes leaves R blocked, an invalid end state */
    :: failed && nempty(fb) -> fb?t, p, a
    :: !failed && fb?[_, eval(esn), _] ->
            fb?t, p, a;
            esn++;
#ifdef FB_WINDOW
            fb_done++;
            if
            :: (fb_done - fb_pub >= W / 2) && !push_due ->
                if
                :: fb_pub = fb_done
                :: push_due = 1
                fi
            :: else -> skip
            fi;
#endif
            if
            :: t == AM ->
                assert(a == am_delivered);
                am_delivered++
            :: t == RING ->
                assert(!ring_open);
                ring_open = 1; rx_head = 0; rx_epoch++
            :: t == WANTED -> skip
            :: t == REQ ->
                if
                :: atomic { ring_owner == 0 -> ring_owner = 1;
                            ring_open = 1; rx_head = 0; rx_epoch++ };
                    answer = 1
                :: atomic { ring_owner != 0 -> skip };
                    answer = 2
                fi
            :: t == RELEASED ->
                assert(revoking);
                revoking = 0;
#ifndef CLOSE_AT_REVOKE
                assert(ring_written == ring_read);
                ring_free()
#endif
            fi
#if defined(FB_WINDOW) && !defined(NO_PUSH_RETRY)
    :: push_due -> fb_pub = fb_done; push_due = 0
#endif
    /* The writer tells R that S is gone: the revoked ring comes back */
#ifdef RECLAIM_ALIVE
    :: revoking ->
#else
    :: revoking && s_dead ->
#endif
        revoking = 0;
        failed   = 1;
        ring_free()
    :: s_dead && !revoking && empty(fb) ->
        break
    /* R goes on progressing while a push is due: it stops only here */
    :: (am_delivered == K) && !revoking && empty(fb) && PUSHED ->
        rx_done = 1;
        break
    od
}

/* Another sender: takes the free ring once and gives it back */
proctype O()
{
end_o:
    atomic { ring_owner == 0 -> ring_owner = 2 };
    atomic { ring_owner = 0 }
}

init {
    atomic {
        slot_psn[0] = EMPTY;
        slot_psn[1] = EMPTY;
        run S();
        run R();
        run O()
    }
}
