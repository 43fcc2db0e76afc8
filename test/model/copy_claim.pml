/*
 * ucx-spec: model of the idle-side copy on shared memory (issue 11's design,
 * ucp_proto_spec/README.md, "The idle side copies"), checked with spin by
 * test/model/run before the code exists, so that the code has a protocol
 * that is known to be right to follow.
 *
 * A rendezvous transfer whose two sides are both known is offered to both.
 * The initiator (the sender that took an RTR, or the receiver that matched
 * an RTS when it posted) publishes the transfer in its claim slot, a word of
 * (generation, state) that both processes map, and sends OFFER(generation)
 * to the peer on the ordered control path.  It does not claim it in the call
 * that offers it.  Afterwards, whichever side is in the library first with
 * the transfer pending claims it with one compare-and-swap, copies, and
 * stores DONE; the other completes when it reads DONE, or a later
 * generation: the initiator reuses the slot for its next transfer as soon
 * as it completed, possibly before the peer read OFFER.  The peer may stop
 * entering the library at any time (it computes forever); it never stops in
 * the middle of a copy, which is one call.
 *
 * Every transfer has buffers of its own on both sides (all receives and
 * sends may be posted at once), and the copy moves two words, one step
 * each, so that a side that completes early shows up in the data: the
 * sender overwrites its buffer as soon as its request completes, and the
 * receiver checks its buffer when its request completes.
 *
 * With DEATH the peer may also die at any step, in the middle of a copy
 * too; the initiator learns it from UCX's endpoint error handling
 * (peer_dead) and fails the request of every transfer it cannot finish,
 * which then carries no data.
 *
 * INIT_SENDS=1: the sender initiates (an RTR was taken; the receiver copies
 * by CMA get when it claims).  INIT_SENDS=0: the receiver initiates (an RTS
 * matched at post; the sender copies by CMA put when it claims).
 *
 * Checked:
 *  - every transfer is copied exactly once (assertion);
 *  - no side completes before the copy is done, and nobody copies after a
 *    side completed (assertions on the data and in the copy);
 *  - no deadlock, and the initiator completes every transfer even when the
 *    peer stops entering the library (spin's invalid end states: the peer
 *    may end waiting for an OFFER, nowhere else).
 *
 * Seeded faults, each of which must make the check fail (test/model/run):
 *  NO_GEN       the claim compares the state only: a stale OFFER claims the
 *               slot's next transfer
 *  EARLY_DONE   the side that lost the claim completes when it sees the
 *               slot claimed, not done
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

#define FREE    0
#define OFFERED 1
#define MINE    2      /* claimed by the initiator */
#define PEERS   3      /* claimed by the peer */
#define DONE    4

/* The claim word: one 64-bit word in the implementation */
byte gen   = 0;
byte state = FREE;

chan offer = [T] of { byte };    /* OFFER(generation), initiator to peer */

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

#ifdef NO_CAS
#define CLAIM(g, who) \
    (gen == g && state == OFFERED) -> skip; \
    state = who
#else
#ifdef NO_GEN
#define CLAIM(g, who) atomic { (state == OFFERED) -> state = who }
#else
#define CLAIM(g, who) atomic { (gen == g && state == OFFERED) -> state = who }
#endif
#endif

#ifdef EARLY_DONE
#define FINISHED(g) (gen != g || state != OFFERED)
#else
#define FINISHED(g) (gen != g || state == DONE)
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

    do
    :: g <= T ->
       /* The call that offers: publishes, tells the peer, never claims */
       atomic { gen = g; state = OFFERED };
       offer ! g;

       /* Any later library entry, however late */
       if
#ifndef INIT_WAITS
       :: CLAIM(g, MINE);
          copy(g);
          state = DONE
#endif
       :: FINISHED(g)
#if defined(DEATH) && !defined(NO_ERROR)
       :: peer_dead && state == PEERS ->
          init_done[g] = true;   /* failed: no data, no check */
          failed[g] = true;
          g++;
          goto next
#endif
       fi;

       init_done[g] = true;
       complete(INIT_SENDS, g);
       g++;
next:  skip
    :: else -> break
    od;

    /* every transfer was copied, the peer's ones included, unless it failed */
    g = 1;
    do
    :: g <= T -> assert(copies[g] == 1 || failed[g]); g++
    :: else -> break
    od
}

proctype peer()
{
    byte g;

#ifdef DEATH
    {
#endif
end:
    do
    :: offer ? g ->
       /* In the library: the AM handler of OFFER */
       if
       :: CLAIM(g, PEERS);
          copy(g);
          state = DONE
       :: atomic { !(gen == g && state == OFFERED) -> skip };
          /* lost the claim: complete at a later progress call */
          FINISHED(g)
       fi;
       peer_done[g] = true;
       complete(!INIT_SENDS, g)
    :: break       /* computes forever, never enters the library again */
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
