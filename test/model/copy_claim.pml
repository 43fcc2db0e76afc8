/*
 * ucx-spec: model of the idle-side copy on shared memory
 * (ucp_proto_spec/spec_claim.c; README.md there, "The idle side copies"),
 * checked with spin by test/model/run.
 *
 * A rendezvous transfer whose two sides are both known is offered to both.
 * The initiator (the sender that took an RTR, or the receiver that matched
 * an RTS when it posted) publishes the transfer in a slot of its claim page,
 * a word of (generation, state) that both processes map, and sends
 * OFFER(generation) to the peer on the ordered control path.  It does not
 * claim in the call that offers.  At its next library entry, however late,
 * it tries the claim once (compare-and-swap OFFERED -> CLAIMED) and frees
 * the slot whatever it found: its next transfer reuses the slot with the
 * next generation, possibly before the peer read this OFFER.  The peer
 * queues an OFFER when its progress reads it and tries the claim at a later
 * point of that progress or of a later one.  The winner copies (put or get,
 * one call) and sends FIN (UCX's ATP or ATS) on the same path; the loser
 * completes when FIN arrives.  The peer may stop entering the library at any
 * time (it computes for ever); it never stops in the middle of a call.
 *
 * Every transfer has buffers of its own on both sides, and the copy moves
 * two words, one step each, so that a side that completes early shows up in
 * the data: the sender overwrites its buffer as soon as its request
 * completes, and the receiver checks its buffer when its request completes.
 *
 * With DEATH the peer may also die at any step, mid-copy too; the initiator
 * learns it from UCX's endpoint error handling (peer_dead) and fails the
 * request of a transfer it cannot finish, which then carries no data.
 *
 * INIT_SENDS=1: the sender initiates (an RTR was taken; the receiver gets
 * when it claims).  INIT_SENDS=0: the receiver initiates (an RTS matched at
 * post; the sender puts when it claims).
 *
 * Checked:
 *  - every transfer is copied exactly once (assertions);
 *  - no side completes before the copy is done, and nobody copies after a
 *    side completed (assertions on the data and in the copy);
 *  - no deadlock, and the initiator completes every transfer even when the
 *    peer stops entering the library (spin's invalid end states: the peer
 *    may end anywhere in its loop, the initiator only when it is done).
 *
 * Seeded faults, each of which must make the check fail (test/model/run):
 *  NO_GEN       the claim compares the state only: a stale OFFER claims the
 *               slot's next transfer
 *  EARLY_DONE   the side that lost the claim completes at once, without
 *               waiting for the winner's FIN
 *  NO_CAS       the claim reads OFFERED, then writes its claim (two steps)
 *  INIT_WAITS   the initiator never claims: it waits for the peer
 *  NO_ERROR     (DEATH) a transfer the dead peer claimed is waited for
 */

#ifndef T
#define T 3            /* transfers through one claim slot, back to back */
#endif
#ifndef INIT_SENDS
#define INIT_SENDS 1
#endif

#define OFFERED 1
#define CLAIMED 2

mtype = { OFFER, FIN };

/* The claim word: one 64-bit word in the implementation */
byte gen   = 0;
byte state = 0;

chan to_peer = [2 * T] of { mtype, byte }; /* OFFER(g), FIN(g) */
chan to_init = [T] of { byte };            /* FIN(g) */

/* Transfer g's buffers: two words each */
byte src0[T + 1];
byte src1[T + 1];
byte dst0[T + 1];
byte dst1[T + 1];
byte copies[T + 1];
bool init_done[T + 1];
bool peer_done[T + 1];
bool peer_dead = false;
bool failed[T + 1];

inline copy(g)
{
    assert(!init_done[g] && !peer_done[g]);
    dst0[g] = src0[g];
    dst1[g] = src1[g];
    copies[g]++;
    assert(copies[g] == 1)
}

/* A side's request completes: the receiver's data must be there, and the
 * sender reuses its buffer at once */
inline complete(is_sender, g)
{
    if
    :: is_sender ->
       src0[g] = 0;
       src1[g] = 0
    :: else ->
       assert(dst0[g] == g && dst1[g] == g)
    fi
}

#ifdef NO_GEN
#define CAN_CLAIM(g) (state == OFFERED)
#else
#define CAN_CLAIM(g) (gen == g && state == OFFERED)
#endif

/* won = the compare-and-swap succeeded */
#ifdef NO_CAS
#define CLAIM(g, won) \
    if \
    :: CAN_CLAIM(g) -> state = CLAIMED; won = true \
    :: else -> won = false \
    fi
#else
#define CLAIM(g, won) \
    atomic { \
        if \
        :: CAN_CLAIM(g) -> state = CLAIMED; won = true \
        :: else -> won = false \
        fi \
    }
#endif

init
{
    byte g = 1;

    do
    :: g <= T -> src0[g] = g; src1[g] = g; g++
    :: else -> break
    od;
    run initiator();
    run peer()
}

proctype initiator()
{
    byte g = 1;
    bool won;

    do
    :: g <= T ->
       /* The call that offers: publishes, tells the peer, never claims */
       atomic { gen = g; state = OFFERED };
       to_peer ! OFFER, g;

       /* Its next library entry: one claim, then the slot is free */
#ifdef INIT_WAITS
       won = false;
#else
       CLAIM(g, won);
#endif
       if
       :: won ->
          copy(g);
          to_peer ! FIN, g
       :: else ->
#ifndef EARLY_DONE
          if
          :: to_init ? eval(g)
#if defined(DEATH) && !defined(NO_ERROR)
          :: peer_dead -> failed[g] = true
#endif
          fi
#endif
       fi;

       init_done[g] = true;
       if
       :: !failed[g] -> complete(INIT_SENDS, g)
       :: else -> skip
       fi;
       g++
    :: else -> break
    od;

    /* every transfer was copied, unless it failed with the dead peer */
    g = 1;
    do
    :: g <= T -> assert(copies[g] == 1 || failed[g]); g++
    :: else -> break
    od
}

proctype peer()
{
    bool pend[T + 1];
    byte npend = 0;
    byte g, k;
    bool won;

#ifdef DEATH
    {
#endif
end:
    do
    :: to_peer ? OFFER, g ->    /* progress reads it: queued */
       pend[g] = true;
       npend++
    :: to_peer ? FIN, g ->      /* the initiator copied: ATP or ATS */
       peer_done[g] = true;
       complete(!INIT_SENDS, g)
    :: npend > 0 ->             /* the claim pass of a progress call */
       k = 1;
       do
       :: (k <= T) && !pend[k] -> k++
       :: else -> break
       od;
       pend[k] = false;
       npend--;
       CLAIM(k, won);
       if
       :: won ->
          copy(k);
          to_init ! k;
          peer_done[k] = true;
          complete(!INIT_SENDS, k)
       :: else ->
#ifdef EARLY_DONE
          peer_done[k] = true;
          complete(!INIT_SENDS, k)
#else
          skip               /* its FIN comes */
#endif
       fi
    :: break       /* computes for ever, never enters the library again */
    od
#ifdef DEATH
    } unless { peer_dead }
#endif
}

#ifdef DEATH
/* The peer's process may die at any step: the peer stops where it is */
active proctype reaper()
{
    peer_dead = true
}
#endif
