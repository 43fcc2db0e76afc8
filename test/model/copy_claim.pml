/*
 * ucx-spec: model of the idle-side copy on shared memory
 * (ucp_proto_spec/spec_claim.c; README.md there, "The idle side copies"),
 * checked with spin by test/model/run.
 *
 * A rendezvous transfer whose two sides are both known is offered to both.
 * The initiator (the sender that took an RTR, or the receiver that matched
 * an RTS when it posted) takes a free slot of its claim page, a word of
 * (generation, state) that both processes map, publishes the transfer in it
 * and sends OFFER(slot, generation) to the peer on the ordered control path.
 * It does not claim in the call that offers, and may offer further
 * transfers, in other slots, before it claims.  At a later library entry,
 * however late, it tries the claim of its oldest offer once (compare-and-
 * swap OFFERED -> CLAIMED) and frees the slot whatever it found: a later
 * transfer reuses the slot with its own generation, possibly before the
 * peer read this OFFER.  The slot is the initiator's alone to free: the
 * peer's record of the offer names the same word (on a loopback endpoint,
 * in the same process) and frees nothing.  The peer
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
 *  - a slot is taken only while free and freed only while taken, once per
 *    transfer (assertions on the free list);
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
 *  PEER_FREES   the peer frees the slot after its claim too, as both
 *               records of a loopback offer once did (issue 28)
 */

#ifndef T
#define T 3            /* transfers, through S claim slots */
#endif
#ifndef S
#define S 2            /* slots of the claim page: T > S recycles them */
#endif
#ifndef INIT_SENDS
#define INIT_SENDS 1
#endif

#define OFFERED 1
#define CLAIMED 2

mtype = { OFFER, FIN };

/* The claim page: one 64-bit word a slot in the implementation */
byte gen[S];
byte state[S];

/* The initiator's free list of slots, and the slot of each transfer */
byte free_slots[S];
byte nfree = 0;
bool taken[S];
byte slot_of[T + 1];

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
#define CAN_CLAIM(s, g) (state[s] == OFFERED)
#else
#define CAN_CLAIM(s, g) (gen[s] == g && state[s] == OFFERED)
#endif

/* won = the compare-and-swap on slot s succeeded */
#ifdef NO_CAS
#define CLAIM(s, g, won) \
    if \
    :: CAN_CLAIM(s, g) -> state[s] = CLAIMED; won = true \
    :: else -> won = false \
    fi
#else
#define CLAIM(s, g, won) \
    atomic { \
        if \
        :: CAN_CLAIM(s, g) -> state[s] = CLAIMED; won = true \
        :: else -> won = false \
        fi \
    }
#endif

/* claim_open and claim_take's release: a slot leaves and rejoins the list
 * once per transfer; the list never holds more than the page */
inline take_slot(s)
{
    assert(nfree > 0);
    nfree--;
    s = free_slots[nfree];
    assert(!taken[s]);
    taken[s] = true
}

inline free_slot(s)
{
    assert(taken[s] && nfree < S);
    taken[s] = false;
    free_slots[nfree] = s;
    nfree++
}

init
{
    byte g = 1;

    do
    :: g <= T -> src0[g] = g; src1[g] = g; g++
    :: else -> break
    od;
    g = 0;
    do
    :: g < S -> free_slots[g] = g; g++
    :: else -> break
    od;
    nfree = S;
    run initiator();
    run peer()
}

proctype initiator()
{
    byte next = 1;  /* the next transfer to offer */
    byte g = 1;     /* the oldest offered, not yet claimed */
    byte s;
    bool won;

    do
    :: (next <= T) && (nfree > 0) ->
       /* The call that offers: a slot, published, the peer told; no claim */
       atomic {
           take_slot(s);
           slot_of[next] = s;
           gen[s] = next;
           state[s] = OFFERED
       };
       to_peer ! OFFER, next;
       next++
    :: g < next ->
       /* A later library entry: one claim, then the slot is free */
       s = slot_of[g];
#ifdef INIT_WAITS
       won = false;
#else
       CLAIM(s, g, won);
#endif
       atomic { free_slot(s) };
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
    :: g > T -> break
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
       CLAIM(slot_of[k], k, won);
#ifdef PEER_FREES
       atomic { free_slot(slot_of[k]) };
#endif
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
