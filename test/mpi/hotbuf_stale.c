/**
 * ucx-spec: a hot send buffer whose memory changes under it (Rashti &
 * Afsahi's zero-copy eager; UCX issues #3686 and #11467 show what goes wrong
 * when a registration outlives its pages).
 *
 * Rank 0 sends from one buffer until it is hot (UCX_SPEC_HOTBUF_REUSE sets
 * when), then changes the memory behind the same address and sends from it
 * again: new contents alone, free and malloc, munmap and mmap(MAP_FIXED) at
 * the same address, mmap(MAP_FIXED) over the live buffer, madvise(DONTNEED),
 * shmdt and shmat of another segment at the same address, realloc.  Every
 * message carries a pattern of (case, message); rank 1 checks every byte.
 * A registration left cached for the old pages would send the old pattern.
 *
 * usage: mpirun -np 2 hotbuf_stale [SIZE [USES [isend]]]
 *   SIZE bytes per message (default 4096, below UCX's zcopy threshold),
 *   USES sends before and after each change (default 8),
 *   isend: MPI_Isend and MPI_Wait instead of MPI_Send (Open MPI asks UCP
 *   for fast completion on MPI_Send only, which changes v2's protocols).
 *
 * See file LICENSE for terms.
 */

#include <mpi.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#define HOTBUF_CASES(_c) \
    _c(rewrite) \
    _c(free_malloc) \
    _c(munmap_mmap_fixed) \
    _c(mmap_fixed_over) \
    _c(madvise_dontneed) \
    _c(shmdt_shmat) \
    _c(realloc)

typedef enum {
#define HOTBUF_CASE_ENUM(_name) CASE_##_name,
    HOTBUF_CASES(HOTBUF_CASE_ENUM)
#undef HOTBUF_CASE_ENUM
    CASE_LAST
} hotbuf_case_t;

static const char *case_names[] = {
#define HOTBUF_CASE_NAME(_name) #_name,
    HOTBUF_CASES(HOTBUF_CASE_NAME)
#undef HOTBUF_CASE_NAME
};

static size_t size, mapped;
static int use_isend;
static int shm_id = -1;


static unsigned char pattern(int c, int msg, size_t offset)
{
    uint64_t x = ((uint64_t)(c + 1) * 0x9E3779B97F4A7C15ull) ^
                 ((uint64_t)msg << 40) ^ (offset * 0xBF58476D1CE4E5B9ull);

    x ^= x >> 31;
    return (unsigned char)(x ^ (x >> 17));
}

static void die(const char *what)
{
    perror(what);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static void *map_fixed(void *at)
{
    void *p = mmap(at, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | (at ? MAP_FIXED : 0), -1, 0);

    if (p == MAP_FAILED) {
        die("mmap");
    }
    return p;
}

static void *shm_attach(void *at)
{
    void *p;

    shm_id = shmget(IPC_PRIVATE, mapped, IPC_CREAT | 0600);
    if (shm_id < 0) {
        die("shmget");
    }
    p = shmat(shm_id, at, 0);
    /* removed now: it goes when detached, and a crash leaves nothing */
    shmctl(shm_id, IPC_RMID, NULL);
    if (p == (void*)-1) {
        die("shmat");
    }
    return p;
}

static void *open_buffer(hotbuf_case_t c)
{
    switch (c) {
    case CASE_rewrite:
    case CASE_free_malloc:
    case CASE_realloc:
        return malloc(size);
    case CASE_shmdt_shmat:
        return shm_attach(NULL);
    default:
        return map_fixed(NULL);
    }
}

/* The memory behind the buffer changes; its address mostly does not */
static void *change(hotbuf_case_t c, void *buf)
{
    void *p;

    switch (c) {
    case CASE_rewrite:
        return buf;
    case CASE_free_malloc:
        free(buf);
        return malloc(size);
    case CASE_munmap_mmap_fixed:
        munmap(buf, mapped);
        return map_fixed(buf);
    case CASE_mmap_fixed_over:
        return map_fixed(buf);
    case CASE_madvise_dontneed:
        /* private anonymous pages come back as new zeroed ones */
        if (madvise(buf, mapped, MADV_DONTNEED) != 0) {
            die("madvise");
        }
        return buf;
    case CASE_shmdt_shmat:
        shmdt(buf);
        return shm_attach(buf);
    case CASE_realloc:
        /* grown (moved, or remapped by mremap) and shrunk back */
        p = realloc(buf, 64 * size);
        if (p == NULL) {
            die("realloc");
        }
        p = realloc(p, size);
        if (p == NULL) {
            die("realloc");
        }
        return p;
    default:
        return buf;
    }
}

static void close_buffer(hotbuf_case_t c, void *buf)
{
    switch (c) {
    case CASE_rewrite:
    case CASE_free_malloc:
    case CASE_realloc:
        free(buf);
        break;
    case CASE_shmdt_shmat:
        shmdt(buf);
        break;
    default:
        munmap(buf, mapped);
        break;
    }
}

static void send_run(hotbuf_case_t c, unsigned char *buf, int first, int uses)
{
    int msg;
    size_t i;

    for (msg = first; msg < first + uses; ++msg) {
        for (i = 0; i < size; ++i) {
            buf[i] = pattern(c, msg, i);
        }
        if (use_isend) {
            MPI_Request req;

            MPI_Isend(buf, (int)size, MPI_BYTE, 1, c, MPI_COMM_WORLD, &req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(buf, (int)size, MPI_BYTE, 1, c, MPI_COMM_WORLD);
        }
    }
}

/* Counts @a buf among the addresses sent from so far */
static void seen(uintptr_t *addresses, int *count, const void *buf)
{
    int i;

    for (i = 0; i < *count; ++i) {
        if (addresses[i] == (uintptr_t)buf) {
            return;
        }
    }
    addresses[(*count)++] = (uintptr_t)buf;
}

static void sender(int uses)
{
    uintptr_t addresses[2 * CASE_LAST];
    int count = 0;
    unsigned char *buf;
    uintptr_t before;
    hotbuf_case_t c;

    for (c = 0; c < CASE_LAST; ++c) {
        buf    = open_buffer(c);
        before = (uintptr_t)buf;
        seen(addresses, &count, buf);
        send_run(c, buf, 0, uses);
        buf = change(c, buf);
        seen(addresses, &count, buf);
        send_run(c, buf, uses, uses);
        printf("rank 0: %-18s %s address\n", case_names[c],
               ((uintptr_t)buf == before) ? "same" : "another");
        close_buffer(c, buf);
    }
    /* a table keyed by address and length tells first uses by this count */
    printf("rank 0: sent from %d addresses\n", count);
}

static int receiver(int uses)
{
    unsigned char *buf = malloc(size);
    hotbuf_case_t c;
    int msg;
    size_t i;

    for (c = 0; c < CASE_LAST; ++c) {
        for (msg = 0; msg < 2 * uses; ++msg) {
            memset(buf, 0, size);
            MPI_Recv(buf, (int)size, MPI_BYTE, 0, c, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
            for (i = 0; i < size; ++i) {
                if (buf[i] != pattern(c, msg, i)) {
                    fprintf(stderr, "rank 1: %s, message %d: byte %zu is "
                            "0x%02x, expected 0x%02x%s\n", case_names[c], msg,
                            i, buf[i], pattern(c, msg, i),
                            (msg >= uses) && (buf[i] == pattern(c, uses - 1, i)) ?
                            " (the old pages' contents)" : "");
                    free(buf);
                    return 1;
                }
            }
        }
    }

    free(buf);
    printf("rank 1: %d cases, %d messages of %zu B each, all bytes verified\n",
           CASE_LAST, 2 * uses, size);
    return 0;
}

int main(int argc, char **argv)
{
    long page = sysconf(_SC_PAGESIZE);
    int rank, nranks, uses, rc = 0;

    size = (argc > 1) ? strtoull(argv[1], NULL, 0) : 4096;
    uses = (argc > 2) ? atoi(argv[2]) : 8;
    use_isend = (argc > 3) && !strcmp(argv[3], "isend");
    mapped = (size + page - 1) / page * page;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    if ((nranks != 2) || (size == 0) || (size > (1 << 30)) || (uses < 1) ||
        ((argc > 3) && !use_isend)) {
        if (rank == 0) {
            fprintf(stderr, "usage: mpirun -np 2 hotbuf_stale [SIZE [USES "
                    "[isend]]]\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    if (rank == 0) {
        sender(uses);
    } else {
        rc = receiver(uses);
    }

    fflush(stdout);
    if (rc != 0) {
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    /* Without it Debian 12's MPICH 4.0.2 hangs in MPI_Finalize over tcp, on
     * Debian's own UCX 1.13.1 too (4 runs of 4): it closes its endpoints
     * and then waits in PMI's barrier, where it no longer progresses the
     * close the other rank waits on.  (4.2 meets in PMI's barrier first;
     * its rarer hang is test/rdma/check's mpich_finalize_hung) */
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
}
