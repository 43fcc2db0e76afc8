/**
 * ucx-spec: the shared-memory stage of the RDMA barrier.
 *
 * See file LICENSE for terms.
 */

#include "specrdv_shm_barrier.h"

#include <sched.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <stddef.h>


/* Spins between two progress calls, and between two yields (with more
 * processes than cores, every spin does both) */
#define UCT_SPECRDV_SHM_BARRIER_PROGRESS 64
#define UCT_SPECRDV_SHM_BARRIER_YIELD    4096


/* @a oversubscribed is the owner's yield_always, read once per wait so that
 * a spin reads nothing but the line it waits on */
static void uct_specrdv_shm_barrier_pause(uct_specrdv_shm_barrier_t *b,
                                          unsigned *spins, int oversubscribed)
{
    ++*spins;
    if (oversubscribed) {
        /* the process we wait for, or the one MPI's progress waits for, may
         * need our core: give it at every spin, and serve MPI every time */
        b->progress(b->progress_arg);
        sched_yield();
        return;
    }

    if (*spins % UCT_SPECRDV_SHM_BARRIER_YIELD == 0) {
        sched_yield();
    }
    if (*spins % UCT_SPECRDV_SHM_BARRIER_PROGRESS == 0) {
        b->progress(b->progress_arg);
        return;
    }
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ volatile("yield");
#endif
}

int uct_specrdv_shm_barrier_create(int size)
{
    return shmget(IPC_PRIVATE,
                  (size_t)size * sizeof(uct_specrdv_shm_barrier_line_t),
                  IPC_CREAT | 0600);
}

int uct_specrdv_shm_barrier_attach(uct_specrdv_shm_barrier_t *b, int shmid,
                                   int size, int rank,
                                   void (*progress)(void *arg),
                                   void *progress_arg)
{
    void *addr = shmat(shmid, NULL, 0);

    if (addr == (void*)-1) {
        return -1;
    }

    b->lines = addr;
    b->size  = size;
    b->rank  = rank;
    b->seq          = 0;
    b->progress     = progress;
    b->progress_arg = progress_arg;
    b->yield_always = 0;
    return 0;
}

void uct_specrdv_shm_barrier_unlink(int shmid)
{
    shmctl(shmid, IPC_RMID, NULL);
}

void uct_specrdv_shm_barrier_detach(uct_specrdv_shm_barrier_t *b)
{
    shmdt((void*)b->lines);
    b->lines = NULL;
}

uint64_t uct_specrdv_shm_barrier_gather(uct_specrdv_shm_barrier_t *b)
{
    const int oversubscribed = b->yield_always;
    uint64_t seq             = ++b->seq;
    unsigned spins           = 0;
    int i;

    for (i = 1; i < b->size; ++i) {
        while (__atomic_load_n(&b->lines[i].seq, __ATOMIC_ACQUIRE) < seq) {
            uct_specrdv_shm_barrier_pause(b, &spins, oversubscribed);
        }
    }
    return seq;
}

void uct_specrdv_shm_barrier_release(uct_specrdv_shm_barrier_t *b)
{
    __atomic_store_n(&b->lines[0].seq, b->seq, __ATOMIC_RELEASE);
}

void uct_specrdv_shm_barrier_arrive(uct_specrdv_shm_barrier_t *b)
{
    const int oversubscribed = b->yield_always;
    uint64_t seq             = ++b->seq;
    unsigned spins           = 0;

    __atomic_store_n(&b->lines[b->rank].seq, seq, __ATOMIC_RELEASE);
    while (__atomic_load_n(&b->lines[0].seq, __ATOMIC_ACQUIRE) < seq) {
        uct_specrdv_shm_barrier_pause(b, &spins, oversubscribed);
    }
}
