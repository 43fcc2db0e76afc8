/**
 * ucx-spec: the verbs writer of the specrdv transport (Liu et al., ICS'03,
 * over libibverbs RC).
 *
 * Every active RoCE port is a device.  What peers write to an interface is
 * registered once, when the interface opens, and advertised when a
 * connection is made: the rings of the polling set, and a word per peer
 * where the receiver answers a ring request and returns credits.
 *
 *  - wireup (specrdv_verbs_wireup.c): the interface address is an IP address
 *    and a TCP port.  The first send to a peer creates an RC QP and trades
 *    what the QPs and the memory need over a TCP connection this writer
 *    owns; the connection stays open, so that a peer that dies is seen as
 *    its end of file, and UCX's error handling learns of it.
 *  - wire acts (specrdv_verbs_peer.c): a ring message is one RDMA write of
 *    the sealed slot from the sender's registered mirror of the ring,
 *    inline when small; the fallback channel is SEND into a shared receive
 *    queue; credits and ring answers are 4-byte RDMA writes.
 *  - put/get (specrdv_verbs_ep.c): RDMA write/read, from the user's memory
 *    (zcopy) or through a registered bounce buffer (bcopy, which UCP asks
 *    of a transport before it takes it for RMA at all).
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_VERBS_H_
#define UCT_SPECRDV_VERBS_H_

#include <uct/specrdv/specrdv_ep.h>
#include <uct/specrdv/specrdv_writer.h>
#include <ucs/datastruct/queue.h>
#include <ucs/memory/rcache.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>


#define UCT_SPECRDV_VERBS_MD_PREFIX  "specrdv_"

/* Work requests kept free for credit updates and ring answers, which must
 * not wait behind the messages they would unblock */
#define UCT_SPECRDV_VERBS_TX_RESERVE 4

/* Work requests a message may take: a ring message clears its tail byte
 * first where a gathered payload left it unknown */
#define UCT_SPECRDV_VERBS_MSG_WRS    2

/* Incoming connections read at once; more wait in the listen backlog */
#define UCT_SPECRDV_VERBS_MAX_ACCEPTING 16

/* Most iov entries of a put/get */
#define UCT_SPECRDV_VERBS_MAX_IOV    8

/* A put/get bcopy's bounce buffer: UCX's IB segment (UCX_IB_SEG_SIZE) */
#define UCT_SPECRDV_VERBS_BCOPY_SIZE 8192


/* UCX_SPECRDV_VERBS_* */
typedef struct uct_specrdv_verbs_config {
    unsigned                 tx_queue_len;
    unsigned                 rx_queue_len;
    unsigned                 fb_bufs;
    unsigned                 fb_window;
    unsigned                 max_peers;
    size_t                   max_inline;  /* MEMUNITS */
    unsigned long            gid_index;   /* ULUNITS */
    double                   timeout;
    unsigned                 retry_count;
} uct_specrdv_verbs_config_t;


typedef struct uct_specrdv_verbs_md {
    uct_specrdv_md_t         super;
    struct ibv_context       *ctx;
    struct ibv_pd            *pd;
    struct ibv_device_attr   dev_attr;
    ucs_rcache_t             *rcache;     /* NULL: every mem_reg registers */
    double                   rcache_overhead;
} uct_specrdv_verbs_md_t;


/* A memory handle: alone (direct registration), or inside a cached region */
typedef struct uct_specrdv_verbs_mem {
    struct ibv_mr            *mr;
} uct_specrdv_verbs_mem_t;

typedef struct uct_specrdv_verbs_rcache_region {
    ucs_rcache_region_t      super;
    uct_specrdv_verbs_mem_t  memh;
} uct_specrdv_verbs_rcache_region_t;

static UCS_F_ALWAYS_INLINE uint32_t uct_specrdv_verbs_memh_lkey(uct_mem_h memh)
{
    return ((uct_specrdv_verbs_mem_t*)memh)->mr->lkey;
}


/* What a peer needs to reach an interface */
typedef struct uct_specrdv_verbs_iface_addr {
    uct_specrdv_iface_addr_t super;
    uint64_t                 nonce;      /* this interface instance */
    uint32_t                 ip;         /* network order */
    uint16_t                 port;       /* network order */
    uint32_t                 slot_size;
} UCS_S_PACKED uct_specrdv_verbs_iface_addr_t;


/* Where a sender learns the answer to its ring request and its credits; the
 * receiver writes them, the sender reads them locally.  The ring's two carry
 * a count in their upper half (ring requests answered, rings granted), so an
 * answer or a credit for an earlier ring is never taken for the current
 * one; the fallback count only grows, and RC places the writes to it in
 * order. */
typedef struct uct_specrdv_verbs_word {
    volatile uint32_t        answer;     /* answers << 16 | ring or REFUSED */
    volatile uint32_t        credits;    /* epoch << 16 | receiver's tail */
    volatile uint32_t        fb_delivered; /* our fallback messages delivered */
} uct_specrdv_verbs_word_t;

#define UCT_SPECRDV_VERBS_REFUSED    0xffff


typedef struct uct_specrdv_verbs_peer uct_specrdv_verbs_peer_t;


/* Whose is a socket polled by the wireup: a peer's QP (which >= 0), an
 * accepted socket, or the listening one (obj NULL) */
typedef struct uct_specrdv_verbs_poll_owner {
    void                      *obj;
    int                       which;
} uct_specrdv_verbs_poll_owner_t;


typedef struct uct_specrdv_verbs_iface {
    uct_specrdv_iface_t       super;
    uint8_t                   port_num;
    uint8_t                   gid_index;
    union ibv_gid             gid;
    enum ibv_mtu              path_mtu;
    uint32_t                  ip;           /* network order */
    uint64_t                  nonce;
    struct ibv_cq             *send_cq;
    struct ibv_cq             *recv_cq;
    struct ibv_srq            *srq;
    /* what peers write to us */
    void                      *rx_mem;      /* rings, then receive buffers */
    struct ibv_mr             *rx_mr;
    uint8_t                   *fb_rx;       /* receive buffers */
    size_t                    fb_size;      /* header + ring payload, aligned */
    uct_specrdv_verbs_word_t  *words;       /* by peer id */
    struct ibv_mr             *words_mr;
    uct_specrdv_verbs_peer_t  **by_id;
    unsigned                  *free_rings;  /* rings nobody holds */
    unsigned                  num_free_rings;
    unsigned                  *held;        /* early receive buffers */
    unsigned                  num_held;
    unsigned                  tx_cq_avail;  /* a failed QP completes every
                                               work request, signalled or
                                               not: the send CQ holds them */
    unsigned                  answers_due;  /* ring answers still to write */
    ucs_mpool_t               bcopy_mp;     /* put/get bounce buffers */
    ucs_mpool_t               comp_mp;      /* uct_specrdv_verbs_comp_t */
    /* wireup */
    int                       listen_fd;
    uint16_t                  port;         /* network order */
    ucs_list_link_t           accepting;    /* sockets before their request */
    unsigned                  wireup_count; /* handshakes under way */
    volatile int              wireup_event; /* raised by the async thread */
    struct {
        struct pollfd                  *fds;
        uct_specrdv_verbs_poll_owner_t *owners;
    } wireup;
    struct {
        unsigned              tx_queue_len;
        unsigned              rx_queue_len;
        unsigned              fb_bufs;
        unsigned              max_peers;
        unsigned              max_inline;
        unsigned              moderation;   /* signal every so many sends */
        uint8_t               timeout;
        uint8_t               retry_count;
    } config;
} uct_specrdv_verbs_iface_t;


/* The connection's wireup state of one QP */
typedef enum {
    UCT_SPECRDV_VERBS_QP_NONE,
    UCT_SPECRDV_VERBS_QP_CONNECTING,  /* TCP connect() under way */
    UCT_SPECRDV_VERBS_QP_REQUESTED,   /* request sent, reply awaited */
    UCT_SPECRDV_VERBS_QP_REPLIED,     /* reply sent, peer's RTR awaited */
    UCT_SPECRDV_VERBS_QP_READY
} uct_specrdv_verbs_qp_state_t;


/* What two interfaces trade over TCP when a QP connects */
typedef struct uct_specrdv_verbs_wireup_msg {
    uint32_t                  magic;
    uint8_t                   type;
    uint8_t                   path_mtu;
    uint16_t                  port;       /* sender's listening port */
    uint64_t                  nonce;      /* sender's interface */
    uint32_t                  ip;
    uint32_t                  qpn;
    uint8_t                   gid[16];
    uint16_t                  your_id;    /* the receiver's id at the sender */
    uint16_t                  num_slots;  /* sender's rings */
    uint32_t                  slot_size;
    uint64_t                  rings;
    uint64_t                  words;
    uint32_t                  rings_rkey;
    uint32_t                  words_rkey;
} UCS_S_PACKED uct_specrdv_verbs_wireup_msg_t;


/* One RC QP of a connection and the TCP socket that set it up */
typedef struct uct_specrdv_verbs_qp {
    struct ibv_qp                  *qp;
    int                            fd;
    uct_specrdv_verbs_qp_state_t   state;
    size_t                         rx_length;  /* of the message being read */
    uct_specrdv_verbs_wireup_msg_t rx_msg;
} uct_specrdv_verbs_qp_t;


/* A flush or RDMA operation waiting for its work request */
typedef struct uct_specrdv_verbs_comp {
    ucs_queue_elem_t          queue;
    uint64_t                  sn;
    uct_completion_t          *comp;
} uct_specrdv_verbs_comp_t;


/* A bounce buffer lent to one RDMA write or read until its work request
 * completes; the bytes follow it */
typedef struct uct_specrdv_verbs_bcopy_desc {
    uct_completion_t          done;       /* gives it back */
    uct_completion_t          *comp;      /* a get's user completion */
    uct_unpack_callback_t     unpack_cb;  /* a get's */
    void                      *unpack_arg;
    unsigned                  length;
    uint32_t                  lkey;
} uct_specrdv_verbs_bcopy_desc_t;


enum {
    UCT_SPECRDV_VERBS_QP_OUT = 0,  /* the QP this side connected */
    UCT_SPECRDV_VERBS_QP_IN  = 1   /* the QP the peer connected */
};


struct uct_specrdv_verbs_peer {
    uct_specrdv_peer_t        super;
    uint64_t                  nonce;
    struct sockaddr_in        addr;       /* its listening socket */
    int                       local_id;   /* its id here */
    int                       remote_closed; /* it said it is leaving */
    int                       reap;       /* gone and unused: destroy it */
    /* Both sides may connect at once; this side sends on the QP that became
     * ready first, so that its ring writes and its fallback sends keep
     * their order */
    uct_specrdv_verbs_qp_t    qps[2];
    uct_specrdv_verbs_qp_t    *tx_qp;
    /* its memory */
    uint64_t                  rings;
    uint32_t                  rings_rkey;
    uint64_t                  words;
    uint32_t                  words_rkey;
    uct_specrdv_ring_geom_t   geom;       /* of its rings */
    /* sending: work requests are numbered; a signalled one completes every
     * one before it */
    uint64_t                  sn_posted;
    uint64_t                  sn_signalled;
    uint64_t                  sn_completed;
    ucs_queue_head_t          comps;
    uint8_t                   *fb_tx;     /* fallback send buffers */
    uint64_t                  *fb_sn;     /* what each was last sent with */
    unsigned                  fb_next;
    unsigned                  fb_waiting; /* sent before the QP was ready */
    struct ibv_mr             *fb_tx_mr;
    /* Work requests built once: a send fills in where and how much */
    struct {
        struct ibv_send_wr    wr;
        struct ibv_sge        sge;
    } fb_wr, ring_wr;
    uint64_t                  ring_remote; /* our ring there */
    uint8_t                   *mirror;    /* our view of our ring there */
    struct ibv_mr             *mirror_mr;
    uct_specrdv_unseen_t      *unseen;    /* per slot, see specrdv_slot.h */
    int                       tx_ring;    /* -1 without one */
    uint16_t                  ring_asked; /* ring requests sent */
    int                       ring_waiting;
    int                       ring_void;  /* revoked before the answer came:
                                             the answer is not to be used */
    int                       fence;      /* the next request waits for the
                                             ones before it */
    /* receiving */
    uint16_t                  ring_answers;
    int                       answer_due;
};


/* Control operations of the verbs writer */
enum {
    UCT_SPECRDV_VERBS_CTRL_RING_REQ   = 1, /* may I have a ring? */
    UCT_SPECRDV_VERBS_CTRL_DISCONNECT = 2  /* last message */
};


extern uct_specrdv_writer_t uct_specrdv_verbs_writer;
extern ucs_config_field_t uct_specrdv_verbs_config_table[];


static UCS_F_ALWAYS_INLINE uct_specrdv_verbs_iface_t*
uct_specrdv_verbs_conns_iface(uct_specrdv_conns_t *conns)
{
    return ucs_container_of(conns, uct_specrdv_verbs_iface_t, super.conns);
}

static UCS_F_ALWAYS_INLINE uct_specrdv_verbs_peer_t*
uct_specrdv_verbs_peer(uct_specrdv_peer_t *peer)
{
    return ucs_derived_of(peer, uct_specrdv_verbs_peer_t);
}

static UCS_F_ALWAYS_INLINE uct_specrdv_verbs_md_t*
uct_specrdv_verbs_iface_md(uct_specrdv_verbs_iface_t *iface)
{
    return ucs_derived_of(iface->super.super.md, uct_specrdv_verbs_md_t);
}

/* Work requests the peer's QP can take now */
static UCS_F_ALWAYS_INLINE unsigned
uct_specrdv_verbs_peer_tx_avail(uct_specrdv_verbs_iface_t *iface,
                                uct_specrdv_verbs_peer_t *peer)
{
    return iface->config.tx_queue_len -
           (unsigned)(peer->sn_posted - peer->sn_completed);
}


typedef struct uct_specrdv_verbs_ep {
    uct_specrdv_ep_t          super;
} uct_specrdv_verbs_ep_t;


/* Room for @a need work requests to the peer: it is connected, its QP and
 * our send CQ have it */
static UCS_F_ALWAYS_INLINE int
uct_specrdv_verbs_peer_tx_room(uct_specrdv_verbs_iface_t *iface,
                               uct_specrdv_verbs_peer_t *peer, unsigned need)
{
    return (peer->tx_qp != NULL) &&
           (uct_specrdv_verbs_peer_tx_avail(iface, peer) >= need) &&
           (iface->tx_cq_avail >= need);
}


/* specrdv_verbs_md.c */
ucs_status_t uct_specrdv_verbs_port_gid(struct ibv_context *ctx,
                                        uint8_t port_num, int gid_index,
                                        uint8_t *gid_index_p, union ibv_gid *gid,
                                        uint32_t *ip_p);

/* specrdv_verbs_conn.c: the connection's life */
ucs_status_t uct_specrdv_verbs_conn_listen(uct_specrdv_verbs_iface_t *iface);
void uct_specrdv_verbs_conn_cleanup(uct_specrdv_verbs_iface_t *iface);
void uct_specrdv_verbs_conn_progress(uct_specrdv_verbs_iface_t *iface);
/* The peer at @a addr whose interface drew @a nonce, made on first use */
ucs_status_t uct_specrdv_verbs_conn_peer_get(uct_specrdv_verbs_iface_t *iface,
                                             uint64_t nonce,
                                             const struct sockaddr_in *addr,
                                             uct_specrdv_verbs_peer_t **peer_p);
void uct_specrdv_verbs_conn_peer_destroy(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer);
/* Connect our QP to the peer; UCS_INPROGRESS until it is ready */
ucs_status_t uct_specrdv_verbs_conn_connect(uct_specrdv_verbs_iface_t *iface,
                                            uct_specrdv_verbs_peer_t *peer);
/* The wire ops' connect: the same, the message waiting meanwhile */
ucs_status_t uct_specrdv_verbs_conn_start(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *generic);
/* Whether the peer's TCP connection is still open at its end */
int uct_specrdv_verbs_conn_alive(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *generic);
/* An RC QP as the interface's QPs are made; *max_inline_p: the inline size
 * the device granted */
struct ibv_qp *uct_specrdv_verbs_conn_create_qp(uct_specrdv_verbs_iface_t *iface,
                                               unsigned *max_inline_p);

/* specrdv_verbs_wire.c: the send path and the fallback channel */
/* Its QP is ready: send what waited in the fallback buffers */
void uct_specrdv_verbs_fb_send_waiting(uct_specrdv_verbs_iface_t *iface,
                                       uct_specrdv_verbs_peer_t *peer);
/* Post one work request on the peer's QP, numbered and signalled as the
 * moderation says or as @a signal asks */
ucs_status_t uct_specrdv_verbs_peer_post(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer,
                                         struct ibv_send_wr *wr, int signal);
/* An RDMA write of @a length bytes written inline; the caller checked the
 * room and the device's inline size */
ucs_status_t uct_specrdv_verbs_peer_write_inline(uct_specrdv_verbs_iface_t *iface,
                                                 uct_specrdv_verbs_peer_t *peer,
                                                 const void *buffer,
                                                 unsigned length,
                                                 uint64_t remote_addr,
                                                 uint32_t rkey);
/* Make the last work request posted signalled, with an empty RDMA write if
 * it was not */
ucs_status_t uct_specrdv_verbs_peer_signal(uct_specrdv_verbs_iface_t *iface,
                                           uct_specrdv_verbs_peer_t *peer);
/* Call @a comp once every work request posted so far has completed */
ucs_status_t uct_specrdv_verbs_peer_add_comp(uct_specrdv_verbs_iface_t *iface,
                                             uct_specrdv_verbs_peer_t *peer,
                                             uct_completion_t *comp);
/* Post @a wr, signalled when @a comp is not NULL, and call @a comp when it
 * completes; UCS_ERR_NO_MEMORY before anything is posted */
ucs_status_t uct_specrdv_verbs_peer_post_comp(uct_specrdv_verbs_iface_t *iface,
                                              uct_specrdv_verbs_peer_t *peer,
                                              struct ibv_send_wr *wr,
                                              uct_completion_t *comp);
unsigned uct_specrdv_verbs_poll_send(uct_specrdv_verbs_iface_t *iface);
ucs_status_t uct_specrdv_verbs_post_recvs(uct_specrdv_verbs_iface_t *iface);
/* Write the answer to the peer's last ring request, or remember to */
void uct_specrdv_verbs_peer_answer(uct_specrdv_verbs_iface_t *iface,
                                   uct_specrdv_verbs_peer_t *peer);
/* The peer's QP failed or the peer is gone: complete what waits with @a
 * status */
void uct_specrdv_verbs_peer_purge_comps(uct_specrdv_verbs_peer_t *peer,
                                        ucs_status_t status);
/* The peer's early messages, held for their turn, that will never have it:
 * their buffers go back to the receive queue */
void uct_specrdv_verbs_rx_drop_held(uct_specrdv_verbs_iface_t *iface,
                                    uint32_t src);

/* specrdv_verbs_wire.c: the wire ops (uct_specrdv_wire_ops_t), as the
 * connection layer calls them */
int uct_specrdv_verbs_tx_room(uct_specrdv_conns_t *conns,
                              uct_specrdv_peer_t *generic);
ucs_status_t uct_specrdv_verbs_ring_request(uct_specrdv_conns_t *conns,
                                            uct_specrdv_peer_t *generic);
uint16_t uct_specrdv_verbs_ring_credits(uct_specrdv_conns_t *conns,
                                        uct_specrdv_peer_t *generic);
void uct_specrdv_verbs_ring_write(uct_specrdv_conns_t *conns,
                                  uct_specrdv_peer_t *generic, uint32_t slot,
                                  size_t length);
ucs_status_t
uct_specrdv_verbs_ring_write_gather(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic, uint32_t slot,
                                    size_t length,
                                    const uct_specrdv_gather_t *gather,
                                    uct_completion_t *comp);
ucs_status_t uct_specrdv_verbs_fb_reserve(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *generic,
                                          uct_specrdv_tx_t *tx);
void uct_specrdv_verbs_fb_post(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *generic,
                               uct_specrdv_tx_t *tx,
                               const uct_specrdv_hdr_t *hdr);
int uct_specrdv_verbs_fb_can_send(uct_specrdv_conns_t *conns,
                                  uct_specrdv_peer_t *generic);
uint32_t uct_specrdv_verbs_fb_credits(uct_specrdv_conns_t *conns,
                                      uct_specrdv_peer_t *generic);
ucs_status_t uct_specrdv_verbs_fb_credit_push(uct_specrdv_conns_t *conns,
                                              uct_specrdv_peer_t *generic,
                                              uint32_t delivered);
void uct_specrdv_verbs_credit_push(uct_specrdv_conns_t *conns,
                                   uct_specrdv_peer_t *generic, unsigned ring,
                                   uint16_t tail);
void uct_specrdv_verbs_ring_release(uct_specrdv_conns_t *conns,
                                    uct_specrdv_peer_t *generic);
void uct_specrdv_verbs_ring_free(uct_specrdv_conns_t *conns, unsigned ring);
void uct_specrdv_verbs_rx_ctrl(uct_specrdv_conns_t *conns,
                               uct_specrdv_peer_t *generic,
                               const uct_specrdv_hdr_t *hdr,
                               const void *payload);
unsigned uct_specrdv_verbs_poll_recv(uct_specrdv_conns_t *conns);

/* specrdv_verbs_iface.c */
ucs_status_t uct_specrdv_verbs_iface_open(uct_md_h md, uct_worker_h worker,
                                          const uct_iface_params_t *params,
                                          const uct_iface_config_t *config,
                                          uct_iface_h *iface_p);

/* specrdv_verbs_ep.c */
UCS_CLASS_DECLARE_NEW_FUNC(uct_specrdv_verbs_ep_t, uct_ep_t,
                           const uct_ep_params_t*);
UCS_CLASS_DECLARE_DELETE_FUNC(uct_specrdv_verbs_ep_t, uct_ep_t);

ucs_status_t uct_specrdv_verbs_ep_pending_add(uct_ep_h tl_ep,
                                              uct_pending_req_t *req,
                                              unsigned flags);
ucs_status_t uct_specrdv_verbs_ep_put_short(uct_ep_h tl_ep, const void *buffer,
                                            unsigned length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey);
ssize_t uct_specrdv_verbs_ep_put_bcopy(uct_ep_h tl_ep,
                                       uct_pack_callback_t pack_cb, void *arg,
                                       uint64_t remote_addr, uct_rkey_t rkey);
ucs_status_t uct_specrdv_verbs_ep_get_bcopy(uct_ep_h tl_ep,
                                            uct_unpack_callback_t unpack_cb,
                                            void *arg, size_t length,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp);
void uct_specrdv_verbs_bcopy_desc_init(uct_iface_h tl_iface, void *obj,
                                       uct_mem_h memh);
ucs_status_t uct_specrdv_verbs_ep_put_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp);
ucs_status_t uct_specrdv_verbs_ep_get_zcopy(uct_ep_h tl_ep,
                                            const uct_iov_t *iov, size_t iovcnt,
                                            uint64_t remote_addr,
                                            uct_rkey_t rkey,
                                            uct_completion_t *comp);
ucs_status_t uct_specrdv_verbs_ep_flush(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp);
ucs_status_t uct_specrdv_verbs_ep_fence(uct_ep_h tl_ep, unsigned flags);
ucs_status_t uct_specrdv_verbs_ep_check(uct_ep_h tl_ep, unsigned flags,
                                        uct_completion_t *comp);
int uct_specrdv_verbs_ep_is_connected(const uct_ep_h tl_ep,
                                      const uct_iface_addr_t *iface_addr);

#endif
