/**
 * ucx-spec: the shared-memory segment of a specrdv shm interface.
 *
 * Every interface owns one System V segment, marked for removal as soon as it
 * is created: the kernel frees it when the last process detaches, so nothing
 * is left behind when a process is killed, and no file is ever created.  Peers
 * attach it by id.  It holds what others write to this interface:
 *
 *  - a control block with the interface's identity and slot geometry;
 *  - a peer table: a sender claims an entry, its id on this interface;
 *  - the fallback channel: a bounded multi-producer FIFO (Vyukov) of elements
 *    as large as a slot;
 *  - the ring pool, the receiver's bounded polling set: a sender that claims a
 *    ring owns it for the connection's lifetime, and the receiver returns
 *    credits through the ring's control line.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_SEG_H_
#define UCT_SPECRDV_SHM_SEG_H_

#include <uct/specrdv/specrdv_slot.h>
#include <uct/specrdv/specrdv_addr.h>
#include <ucs/sys/compiler_def.h>
#include <ucs/sys/sys.h>
#include <sys/types.h>


#define UCT_SPECRDV_SHM_SEG_MAGIC  0x7364727073726375ul  /* "ucrsprds" */


typedef struct uct_specrdv_shm_seg_ctl {
    uint64_t                magic;
    uint64_t                nonce;        /* this interface instance */
    pid_t                   pid;
    uint32_t                max_peers;
    uint32_t                num_rings;
    uint32_t                fifo_size;    /* power of 2 */
    uct_specrdv_ring_geom_t geom;         /* rings and FIFO elements */
    volatile uint32_t       closed;       /* the interface was closed */
    volatile uint64_t       fifo_head UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE);
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_specrdv_shm_seg_ctl_t;


/* One cache line per ring: the sender reads it while the receiver writes it */
typedef struct uct_specrdv_shm_ring_ctl {
    volatile uint32_t owner;     /* 1 + peer id of the sender, 0 when free */
    volatile uint16_t returned;  /* explicit credit update: receiver's tail */
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) uct_specrdv_shm_ring_ctl_t;


typedef struct uct_specrdv_shm_fifo_elem {
    volatile uint64_t seq;
    uct_specrdv_hdr_t hdr;
} UCS_S_PACKED uct_specrdv_shm_fifo_elem_t;


typedef struct uct_specrdv_shm_seg_params {
    uint32_t                max_peers;
    uint32_t                num_rings;
    uint32_t                fifo_size;
    uct_specrdv_ring_geom_t geom;
} uct_specrdv_shm_seg_params_t;


/* What a peer needs to find this interface, and to check it speaks alike */
typedef struct uct_specrdv_shm_iface_addr {
    uct_specrdv_iface_addr_t super;
    uint64_t     nonce;
    int32_t      shmid;
    int32_t      pid;
    ucs_sys_ns_t pid_ns;
    uint32_t     slot_size;
    uint32_t     payload_offset;
} UCS_S_PACKED uct_specrdv_shm_iface_addr_t;


/* A process's handle on a segment, its own or a peer's */
typedef struct uct_specrdv_shm_seg {
    void                        *base;
    int                         shmid;
    uct_specrdv_shm_seg_ctl_t   *ctl;
    volatile uint64_t           *peers;
    uct_specrdv_shm_ring_ctl_t  *ring_ctl;
    uint8_t                     *fifo;
    uint8_t                     *rings;
} uct_specrdv_shm_seg_t;


ucs_status_t uct_specrdv_shm_seg_create(const uct_specrdv_shm_seg_params_t *params,
                                        uint64_t nonce,
                                        uct_specrdv_shm_seg_t *seg);

ucs_status_t uct_specrdv_shm_seg_attach(int shmid, uint64_t nonce,
                                        uct_specrdv_shm_seg_t *seg);

void uct_specrdv_shm_seg_detach(uct_specrdv_shm_seg_t *seg);

size_t uct_specrdv_shm_seg_ring_bytes(const uct_specrdv_ring_geom_t *geom);

static UCS_F_ALWAYS_INLINE uint8_t*
uct_specrdv_shm_seg_ring(const uct_specrdv_shm_seg_t *seg, unsigned ring)
{
    return seg->rings + ring * uct_specrdv_shm_seg_ring_bytes(&seg->ctl->geom);
}

/* Claim an entry of the peer table or a ring; -1 when all are taken */
int uct_specrdv_shm_seg_claim_peer(uct_specrdv_shm_seg_t *seg, uint64_t nonce);

int uct_specrdv_shm_seg_claim_ring(uct_specrdv_shm_seg_t *seg, unsigned peer_id);


/* A FIFO element carries whatever a ring slot carries, behind a longer
 * header: a slot and one cache line */
static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_shm_fifo_elem_size(const uct_specrdv_ring_geom_t *geom)
{
    UCS_STATIC_ASSERT(sizeof(uct_specrdv_shm_fifo_elem_t) <=
                      UCS_SYS_CACHE_LINE_SIZE);
    return geom->slot_size + UCS_SYS_CACHE_LINE_SIZE;
}

static UCS_F_ALWAYS_INLINE size_t
uct_specrdv_shm_fifo_max_payload(const uct_specrdv_shm_seg_t *seg)
{
    return uct_specrdv_shm_fifo_elem_size(&seg->ctl->geom) -
           sizeof(uct_specrdv_shm_fifo_elem_t);
}

static UCS_F_ALWAYS_INLINE uct_specrdv_shm_fifo_elem_t*
uct_specrdv_shm_fifo_elem(const uct_specrdv_shm_seg_t *seg, uint64_t pos)
{
    return (uct_specrdv_shm_fifo_elem_t*)
           (seg->fifo + (pos & (seg->ctl->fifo_size - 1)) *
                        uct_specrdv_shm_fifo_elem_size(&seg->ctl->geom));
}

/* Elements of the FIFO that only control messages may take */
static UCS_F_ALWAYS_INLINE unsigned
uct_specrdv_shm_fifo_ctrl_room(const uct_specrdv_shm_seg_t *seg)
{
    return seg->ctl->fifo_size / 4;
}

/* Whether the element at @a pos is free, and @a spare more after it */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_shm_fifo_free(uct_specrdv_shm_seg_t *seg, uint64_t pos,
                          unsigned spare)
{
    /* The consumer frees elements in order: the last of them frees all */
    return uct_specrdv_shm_fifo_elem(seg, pos + spare)->seq == pos + spare;
}

/**
 * Producer side of the FIFO: take a free element with @a spare free ones
 * after it and return its position, or UCS_ERR_NO_RESOURCE, or
 * UCS_ERR_IO_ERROR if the FIFO is corrupt.  Fill the
 * element's header and payload, then publish it with
 * uct_specrdv_shm_fifo_push().
 */
ucs_status_t uct_specrdv_shm_fifo_reserve(uct_specrdv_shm_seg_t *seg,
                                          unsigned spare, uint64_t *pos_p);

static UCS_F_ALWAYS_INLINE void
uct_specrdv_shm_fifo_push(uct_specrdv_shm_seg_t *seg, uint64_t pos)
{
    ucs_memory_cpu_store_fence();
    uct_specrdv_shm_fifo_elem(seg, pos)->seq = pos + 1;
}

/* Consumer side: the element at pos, if it was pushed */
static UCS_F_ALWAYS_INLINE uct_specrdv_shm_fifo_elem_t*
uct_specrdv_shm_fifo_peek(const uct_specrdv_shm_seg_t *seg, uint64_t pos)
{
    uct_specrdv_shm_fifo_elem_t *elem = uct_specrdv_shm_fifo_elem(seg, pos);

    if (elem->seq != pos + 1) {
        return NULL;
    }
    ucs_memory_cpu_load_fence();
    return elem;
}

static UCS_F_ALWAYS_INLINE void
uct_specrdv_shm_fifo_pop(uct_specrdv_shm_seg_t *seg, uint64_t pos)
{
    ucs_memory_cpu_fence();
    uct_specrdv_shm_fifo_elem(seg, pos)->seq = pos + seg->ctl->fifo_size;
}

#endif
