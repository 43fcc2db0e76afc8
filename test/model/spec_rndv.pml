/*
 * ucx-spec: model of the speculative rendezvous of one envelope
 * (ucp_proto_spec/), checked with spin by test/model/run.
 *
 * One sender posts N sends, each eager or rendezvous; one receiver posts N
 * receives, each fully specified or a wildcard, each predicting eager or
 * rendezvous, and may cancel any receive that is still posted.  Every choice
 * and every interleaving of posts and message arrivals is explored.  Two
 * ordered channels stand for the endpoint's AM lane in each direction.
 *
 * Checked:
 *  - data goes only into the receive that MPI order gives it (message i
 *    into the i-th receive that was not cancelled), whether it comes as
 *    eager, through an RTS, or written by the sender on an RTR;
 *  - no deadlock, and every send and every receive completes (spin's
 *    invalid end states plus the final assertion).
 *
 * The receiver's rule for an RTR (spec_recv.c): the index of its message is
 * the envelope's arrivals plus the receives ahead of it; none if a wildcard
 * or a cancel in flight is ahead.  The sender's rule (spec_send.c): RTR k
 * serves send k only; dropped if send k already went, or at the sender's
 * whim (adaptation, buffer too small, sync send).  A cancel revokes the RTRs
 * of its receive and of those behind; it fails if one of them was taken,
 * or if a REVOKE cannot be sent (the receive then stays posted).
 *
 * Message 0 is the first one after the envelope's first rendezvous send:
 * the sender counts from that send on and its RTS tells the receiver the
 * numbering (spec_send.c, spec_recv.c); before it the receiver knows no
 * envelope and sends no RTR, so earlier messages play no part.
 *
 * UCP's v2 protocols (-DV2) add two things.  A taken RTR's data and its
 * ATP travel on the data lanes (v2's put/zcopy fences each lane, or its
 * active-message rendezvous), unordered with the AM lane that carries the
 * RTR-ACK and the later messages: the receive completes once both arrived,
 * never while it is still in the expected queue.  And a send may be
 * restarted (endpoint reconfiguration): one that took an RTR is then put
 * again, never announced by an RTS; a queued RTR is dropped unsent, as the
 * sender's own drop already covers.
 *
 * Seeded faults, each of which must make the check fail (test/model/run):
 *  NO_WILDCARD_BLOCK    an RTR is sent behind a wildcard
 *  NO_AHEAD             the index ignores the receives ahead
 *  ANY_SEND_TAKES       a send takes any queued RTR, not only its own
 *  NO_REVOKE            a cancel completes without revoking the RTRs behind
 *  ATP_COMPLETES_EARLY  (V2) the ATP completes the receive before its
 *                       RTR-ACK took it out of the expected queue
 *  RTS_AFTER_TAKE       (V2) a send restarted after taking an RTR sends its
 *                       RTS as well
 *  ACK_COMPLETES        (V2) the RTR-ACK completes the receive, as on v1,
 *                       before the data lanes delivered
 */

#ifndef N
#define N 3           /* sends */
#endif
#ifdef CANCEL
#define M (N + 1)     /* receives: one more, to replace a cancelled one */
#else
#define M N
#endif

#define NONE 255

mtype = { EAGER, RTS, RTR_ACK, REVOKE_ACK, RTR, REVOKE };

chan s2r = [3 * N] of { mtype, byte, byte };   /* kind, message, receive */
chan r2s = [3 * N] of { mtype, byte, byte };   /* kind, index, receive */

/* the scenario, chosen at the start */
bool rndv[N];      /* send i is a rendezvous */
bool wild[M];      /* receive j is a wildcard */
bool pred[M];      /* receive j predicts rendezvous */

/* receiver */
byte posted;
bool expected[M];  /* receive j posted, not matched, not cancelled */
bool has_rtr[M];   /* receive j has an RTR the sender may still use */
bool revoking[M];  /* its RTR is being revoked */
bool cancelled[M];
bool cancel_wait[M];
byte got[M];       /* message placed into receive j, NONE if none */
byte arrivals;     /* messages of the envelope that reached the receiver */
byte unexp[N];     /* unexpected messages, oldest first */
byte nunexp;
byte delivered;    /* messages placed into receives */
byte cancels;      /* cancels started */
byte revokes;      /* RTRs under revoke not yet known dead */
byte waiting;      /* cancels not finished */
bool taken;        /* an RTR under revoke was taken */

#ifdef V2
/* the data lanes: a taken RTR's data and ATP, in any order among them and
 * with the AM lane */
bool atp_out[M];   /* in flight to receive j */
byte atp_msg[M];   /* the message they carry */
byte atps;         /* in flight */
bool atp_seen[M];  /* arrived at receive j */
bool ack_seen[M];  /* receive j's RTR-ACK arrived */
#endif

/* sender */
byte next;         /* index of the next send */
byte rtrq[N];      /* receive that RTR k names, NONE if none queued */

/* MPI order: message i goes to the i-th receive not cancelled */
inline expect_match(i, j)
{
    d_step {
        k = 0; c = 0;
        do
        :: (k < j) -> if :: !cancelled[k] -> c++ :: else -> skip fi; k++
        :: else -> break
        od;
        assert(c == i)
    }
}

inline first_expected(j)
{
    d_step {
        j = 0;
        do
        :: (j < posted) && !expected[j] -> j++
        :: else -> break
        od
    }
}

/* receive j is complete: only once it left the expected queue, where an
 * arrival could still match it after it was freed, and (V2) a taken RTR's
 * data arrived */
inline complete(j, i)
{
    assert(!expected[j]);
#ifdef V2
    assert(!ack_seen[j] || atp_seen[j]);
#endif
    got[j] = i; delivered++
}

inline release_rtr(j)
{
    if
    :: has_rtr[j] && revoking[j] -> revokes--; revoking[j] = false
    :: else -> skip
    fi;
    has_rtr[j] = false
}

/* a message that is not an RTR-ACK reached the receiver */
inline deliver(i)
{
    first_expected(j);
    if
    :: (j < posted) ->
        expect_match(i, j);
#ifdef V2
        assert(!atp_seen[j]);   /* no other message's data went into it */
#endif
        expected[j] = false; complete(j, i);
        release_rtr(j)   /* its RTR names this message: dead at the sender */
    :: else ->
        unexp[nunexp] = i; nunexp++
    fi
}

inline finish_cancels()
{
    if
    :: (revokes == 0) ->
        j = 0;
        do
        :: (j < M) ->
            if
            :: cancel_wait[j] ->
                cancel_wait[j] = false; waiting--;
                if
                :: expected[j] && !taken -> expected[j] = false; cancelled[j] = true
                :: else -> skip   /* matched meanwhile, or too late: fails */
                fi
            :: else -> skip
            fi;
            j++
        :: else -> break
        od;
        taken = false
    :: else -> skip
    fi
}

proctype receiver()
{
    byte i, j, k, c, r, ahead;
    bool blocked, failed;

    do
    /* post the next receive */
    :: (posted < N + cancels) ->
        j = posted;
        if
        :: (nunexp > 0) ->
            i = unexp[0];
            d_step { k = 0; do :: (k + 1 < nunexp) -> unexp[k] = unexp[k + 1]; k++
                             :: else -> break od; nunexp-- }
            posted++;
            expect_match(i, j);
            complete(j, i)
        :: else ->
            posted++;
            expected[j] = true;
            if
            :: !wild[j] && pred[j] ->
                d_step {
                    ahead = 0; blocked = false; k = 0;
                    do
                    :: (k < j) ->
                        if
                        :: expected[k] && (wild[k] || cancel_wait[k]) -> blocked = true
                        :: expected[k] -> ahead++
                        :: else -> skip
                        fi;
                        k++
                    :: else -> break
                    od
                }
#ifdef NO_WILDCARD_BLOCK
                blocked = false;
#endif
#ifdef NO_AHEAD
                ahead = 0;
#endif
                if
                :: !blocked -> has_rtr[j] = true; r2s!RTR(arrivals + ahead, j)
                :: else -> skip
                fi
            :: else -> skip
            fi
        fi

#ifdef CANCEL
    /* cancel a posted receive (one per run: M has room for one more) */
    :: (cancels == 0) ->
        cancels++;
        j = 0;
        do
        :: (j < posted) && expected[j] && !cancel_wait[j] -> break
        :: (j < posted) -> j++
        :: (j >= posted) -> break
        od;
        if
        :: (j < posted) ->
            k = j; failed = false;
            do
            :: (k < posted) && !failed ->
                if
#ifndef NO_REVOKE
                :: expected[k] && has_rtr[k] ->
                    revoking[k] = true; revokes++; r2s!REVOKE(0, k)
                /* the REVOKE cannot be sent (no memory): the cancel fails,
                 * the receive stays posted; REVOKEs sent still end theirs */
                :: expected[k] && has_rtr[k] -> failed = true
#endif
                :: else -> skip
                fi;
                k++
            :: else -> break
            od;
            if
            :: !failed -> cancel_wait[j] = true; waiting++
            :: else -> skip
            fi;
            finish_cancels()
        :: else -> skip
        fi
#endif

    /* something arrived */
    :: s2r?EAGER(i, r) -> arrivals++; deliver(i)
    :: s2r?RTS(i, r) -> arrivals++; deliver(i)
    :: s2r?RTR_ACK(i, r) ->
        arrivals++;
        assert(expected[r] && has_rtr[r]);
        if
        :: revoking[r] -> taken = true
        :: else -> skip
        fi;
        expected[r] = false;
        release_rtr(r);
#ifdef V2
        ack_seen[r] = true;
        if
#ifdef ACK_COMPLETES
        :: true -> complete(r, i)
#else
        :: atp_seen[r] -> complete(r, i)
#endif
        :: else -> skip
        fi
#else
        complete(r, i)   /* placed by the sender; checked there too */
#endif
#ifdef V2
    /* a taken RTR's data and ATP, whichever is in flight */
    :: (atps > 0) ->
        r = 0;
        do
        :: (r < M) && atp_out[r] -> break
        :: (r < M) -> r++
        :: (r >= M) -> break
        od;
        if
        :: (r < M) && atp_out[r] ->
            atp_out[r] = false; atps--;
            atp_seen[r] = true;
#ifdef ATP_COMPLETES_EARLY
            complete(r, atp_msg[r])
#else
            if
            :: ack_seen[r] -> complete(r, atp_msg[r])
            :: else -> skip   /* waits for its RTR-ACK */
            fi
#endif
        :: else -> skip
        fi
#endif
    :: s2r?REVOKE_ACK(i, r) ->
        if
        :: has_rtr[r] && revoking[r] -> release_rtr(r)
        :: else -> skip
        fi;
        finish_cancels()

    /* every message delivered, no cancel pending: the receives left posted
     * are spares beyond the last message */
    :: (delivered == N) && (waiting == 0) -> break
    od;
    skip;   /* d_step cannot be a jump target */

    /* receives in posting order got messages 0, 1, 2, ... except the
     * cancelled ones; no cancel is left waiting */
    d_step {
        i = 0; j = 0;
        do
        :: (j < posted) ->
            assert(!cancel_wait[j]);
            if
            :: cancelled[j] -> assert(got[j] == NONE)
            :: (got[j] != NONE) -> assert(got[j] == i); i++
            :: else -> assert(expected[j] && (i == N))
            fi;
            j++
        :: else -> break
        od;
        assert(i == N)
    }
}

proctype sender()
{
    byte i, k, r, c2;

end_sender:    /* waiting for REVOKEs after the last send is a valid end */
    do
    :: r2s?RTR(k, r) ->
        if
        :: (k >= next) && (k < N) -> rtrq[k] = r
        :: else -> skip           /* its send already went */
        fi
    :: r2s?RTR(k, r) -> skip      /* dropped: adaptation, queue full */
    :: r2s?REVOKE(k, r) ->
        d_step {
            k = 0;
            do
            :: (k < N) -> if :: rtrq[k] == r -> rtrq[k] = NONE :: else -> skip fi; k++
            :: else -> break
            od
        }
        s2r!REVOKE_ACK(0, r)
    :: (next < N) ->
        i = next;
        next++;
        if
        :: !rndv[i] -> rtrq[i] = NONE; s2r!EAGER(i, 0)
        :: rndv[i] ->
#ifdef ANY_SEND_TAKES
            d_step { k = 0; do :: (k < N) && (rtrq[k] == NONE) -> k++ :: else -> break od }
            if :: (k < N) -> r = rtrq[k]; rtrq[k] = NONE :: else -> r = NONE fi;
#else
            r = rtrq[i]; rtrq[i] = NONE;
#endif
            if
            :: (r != NONE) ->
                s2r!RTR_ACK(i, r)
                /* the put: data i into receive r; MPI order is checked by
                 * the receiver's final assertion, and here, at the write */
                ;
#ifdef V2
                d_step { atp_msg[r] = i; atp_out[r] = true; atps++ };
#ifdef RTS_AFTER_TAKE
                if
                :: s2r!RTS(i, 0)   /* restarted: announced as well */
                :: skip
                fi;
#endif
#endif
                d_step {
                    k = 0; c2 = 0;
                    do
                    :: (k < r) -> if :: !cancelled[k] -> c2++ :: else -> skip fi; k++
                    :: else -> break
                    od;
                    assert(!cancelled[r] && c2 == i)
                }
            :: (r != NONE) -> s2r!RTS(i, 0)   /* unfit: the ordinary path */
            :: (r == NONE) -> s2r!RTS(i, 0)
            fi
        fi
    od
}

init {
    byte i;

    d_step {
        i = 0;
        do
        :: (i < M) -> got[i] = NONE; i++
        :: else -> break
        od;
        i = 0;
        do
        :: (i < N) -> rtrq[i] = NONE; i++
        :: else -> break
        od
    }

    i = 0;
    do
    :: (i < N) -> if :: rndv[i] = true :: rndv[i] = false fi; i++
    :: else -> break
    od;
    i = 0;
    do
    :: (i < M) ->
        /* a wildcard sends no RTR whatever it predicts */
        if :: wild[i] = true :: pred[i] = true :: skip fi;
        i++
    :: else -> break
    od;

    atomic { run receiver(); run sender() }
}
