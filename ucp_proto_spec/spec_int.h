/**
 * ucx-spec: receiver-initiated speculative rendezvous, internal definitions.
 *
 * The protocol (Rashti & Afsahi, J. Supercomputing 2009, §3) with one change
 * that UCX makes cheap: every message of an envelope carries its place in the
 * envelope's order, so an RTR names the one send it is for.  See README.md in
 * this directory for the message flow and the hazard each rule covers.
 *
 * See file LICENSE for terms.
 */

#ifndef UCP_PROTO_SPEC_INT_H_
#define UCP_PROTO_SPEC_INT_H_

#include "spec_compat.h"
#include "ucp_proto_spec.h"

#include <ucp/core/ucp_types.h>
#include <ucp/rndv/rndv.h>
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  include <ucp/proto/proto_select.h>
#endif
#include <uct/api/uct.h>
#include <ucs/config/parser.h>
#include <ucs/config/types.h>
#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>
#include <ucs/stats/stats.h>
#include <ucs/type/status.h>


/*
 * A send's position in its envelope, as carried by RTS and RTR:
 * [63:56] flags piggybacked on an RTS, [55:40] epoch, [39:0] index.
 * The epoch changes whenever the sender (re)creates the envelope's entry, so
 * an RTR computed against a forgotten numbering can never match.
 */
#define UCP_PROTO_SPEC_INDEX_BITS   40
#define UCP_PROTO_SPEC_EPOCH_BITS   16
#define UCP_PROTO_SPEC_POS_MASK     UCS_MASK(UCP_PROTO_SPEC_INDEX_BITS + \
                                             UCP_PROTO_SPEC_EPOCH_BITS)
#define UCP_PROTO_SPEC_INDEX_MASK   UCS_MASK(UCP_PROTO_SPEC_INDEX_BITS)
#define UCP_PROTO_SPEC_FLAGS_SHIFT  56

enum {
    UCP_PROTO_SPEC_RTS_FLAG_STOP   = UCS_BIT(0), /* stop-RTR (adaptation) */
    UCP_PROTO_SPEC_RTS_FLAG_RESUME = UCS_BIT(1)  /* resume-RTR (re-probe) */
};

/*
 * ucx-spec's control messages, all under one UCP AM id (UCP_AM_ID_SPEC, the
 * patch's only id: UCX 1.21 left five ids free below UCT's 32), named by a
 * type byte after the message.  At the end rather than in front, so that each
 * header keeps the alignment UCT gave the message.
 *   _m(TYPE, name, header): ucp_proto_spec_<name>_handler() takes it
 */
#define UCP_PROTO_SPEC_MSGS(_m) \
    _m(RTR,        rtr,        ucp_proto_spec_rtr_hdr_t)        /* send */  \
    _m(RTR_ACK,    rtr_ack,    ucp_proto_spec_rtr_ack_hdr_t)    /* recv */  \
    _m(REVOKE,     revoke,     ucp_proto_spec_revoke_hdr_t)     /* send */  \
    _m(REVOKE_ACK, revoke_ack, ucp_proto_spec_revoke_ack_hdr_t) /* recv */  \
    _m(OFFER,      offer,      ucp_proto_spec_offer_hdr_t)      /* claim */

#define UCP_PROTO_SPEC_MSG_ENUM(_type, _name, _hdr) UCP_PROTO_SPEC_MSG_##_type,
typedef enum {
    UCP_PROTO_SPEC_MSGS(UCP_PROTO_SPEC_MSG_ENUM)
    UCP_PROTO_SPEC_MSG_LAST
} ucp_proto_spec_msg_type_t;
#undef UCP_PROTO_SPEC_MSG_ENUM

/* Appended to a tag RTS after the packed rkey (the magic word in
 * ucp_proto_spec.h, which takes the trailer off on arrival) */
typedef struct {
    uint64_t pos;    /* flags | epoch | index of this send */
    uint32_t magic;
    uint32_t reserved;
} UCS_S_PACKED ucp_proto_spec_rts_trailer_t;


/* RTR: receiver -> sender, sent when a receive is posted */
typedef struct {
    uint64_t  ep_id;   /* sender's endpoint id (our endpoint's remote id) */
    uint64_t  rreq_id; /* id of the request that carries the RTR: RTR-ACK,
                          ATP and REVOKE-ACK refer to it */
    ucp_tag_t tag;     /* envelope */
    uint64_t  pos;     /* epoch | index of the send this receive will match */
    uint64_t  address; /* receive buffer */
    uint64_t  length;  /* receive buffer length, may exceed the message */
    /* packed rkey follows */
} UCS_S_PACKED ucp_proto_spec_rtr_hdr_t;

/* RTR-ACK: sender -> receiver, "send <pos> took your RTR"; sent before the
 * data is put, so it reaches the receiver ahead of every later message of
 * the envelope and ahead of the ATP */
typedef struct {
    uint64_t  rreq_id;
    ucp_tag_t tag;     /* the send's full tag, for the receive's info */
    uint64_t  length;  /* the message's real length */
} UCS_S_PACKED ucp_proto_spec_rtr_ack_hdr_t;

/* REVOKE: receiver -> sender, "forget RTR <pos>" (receive cancel) */
typedef struct {
    uint64_t  ep_id;
    uint64_t  rreq_id;
    ucp_tag_t tag;
    uint64_t  pos;
} UCS_S_PACKED ucp_proto_spec_revoke_hdr_t;

/* REVOKE-ACK: sender -> receiver, "RTR <rreq_id> is dead here" */
typedef struct {
    uint64_t  rreq_id;
    ucp_tag_t tag;
    uint64_t  pos;     /* with tag, names the RTR even if the id was reused */
} UCS_S_PACKED ucp_proto_spec_revoke_ack_hdr_t;


/* Where an offered copy is claimed (spec_claim.c): a word in the offering
 * worker's claim page, holding the generation and the state */
typedef struct {
    int32_t  shmid;    /* the offering worker's claim page (System V) */
    uint32_t slot;
    uint64_t word;     /* generation | UCP_PROTO_SPEC_CLAIM_OFFERED */
} UCS_S_PACKED ucp_proto_spec_claim_ref_t;

/* OFFER: receiver -> sender, when a receive matched an RTS at post.  Either
 * side may claim the copy: the sender puts into the receive buffer (as for
 * an RTR), or the receiver gets from the send buffer (as for the RTS). */
typedef struct {
    uint64_t                   ep_id;   /* the sender's endpoint id */
    uint64_t                   sreq_id; /* from the RTS */
    uint64_t                   rreq_id; /* the carrier's id, for the ATP */
    uint64_t                   address; /* receive buffer */
    uint64_t                   length;  /* the message's length */
    ucp_proto_spec_claim_ref_t claim;
    /* packed rkey of the receive buffer follows */
} UCS_S_PACKED ucp_proto_spec_offer_hdr_t;

/* Follows an RTR-ACK whose send offers the copy instead of putting at once */
typedef struct {
    uint64_t                   sreq_id;
    uint64_t                   address; /* send buffer */
    ucp_proto_spec_claim_ref_t claim;
    /* packed rkey of the send buffer follows */
} UCS_S_PACKED ucp_proto_spec_rtr_ack_offer_t;


/* UCX_SPEC_SENDER_MASK=auto */
#define UCP_PROTO_SPEC_MASK_AUTO  UINT64_MAX

/* UCX_SPEC_* */
typedef struct ucp_proto_spec_config {
    int          rndv;              /* ucs_ternary_auto_value_t */
    size_t       thresh;
    uint64_t     sender_mask;
    uint64_t     ignore_mask;
    int          early_progress;
    int          shm_balance;
    int          idle_copy;
    double       idle_copy_delay;
    double       adapt_thresh;
    unsigned     adapt_min_sample;
    unsigned     adapt_backoff;
    unsigned     adapt_backoff_max;
    unsigned     env_max;
    unsigned     rtr_queue_max;
    int          report;
} ucp_proto_spec_config_t;

extern ucs_config_field_t ucp_proto_spec_config_table[];
ucs_status_t ucp_proto_spec_config_read(ucp_proto_spec_config_t *config,
                                        const char *env_prefix);


/* Sender side: an RTR that arrived before its send was posted */
typedef struct {
    ucs_list_link_t list;
    uint64_t        pos;
    uint64_t        rreq_id;
    uint64_t        address;
    uint64_t        length;
    size_t          rkey_length;
    uint8_t         rkey[];
} ucp_proto_spec_rtrq_entry_t;

enum {
    UCP_PROTO_SPEC_TX_STOPPED = UCS_BIT(0), /* adaptation: no RTR wanted */
    UCP_PROTO_SPEC_TX_RTRS    = UCS_BIT(1)  /* an RTR came for it */
};

/* Sender side: one (endpoint, tag) */
typedef struct {
    ucs_list_link_t lru;
    ucp_ep_h        ep;
    ucp_tag_t       tag;
    uint64_t        epoch;       /* already shifted into place */
    uint64_t        next;        /* index of the next send */
    uint64_t        rndv_mark;   /* index+1 of the send in the rndv hook */
    uint64_t        rndv_bits;   /* bit (i % 64): send i went rendezvous */
    ucs_list_link_t rtrq;        /* ucp_proto_spec_rtrq_entry_t, by pos */
    unsigned        rtrq_length;
    unsigned        flags;
    /* adaptation window: RTRs received and used since the last decision */
    unsigned        rtr_recv;
    unsigned        rtr_used;
    unsigned        backoff;     /* rendezvous sends to wait before re-probe */
    unsigned        stopped_sends;
} ucp_proto_spec_tx_env_t;

typedef struct {
    ucp_ep_h  ep;
    ucp_tag_t tag;
} ucp_proto_spec_tx_key_t;

enum {
    UCP_PROTO_SPEC_RX_STOPPED  = UCS_BIT(0), /* sender said stop-RTR */
    UCP_PROTO_SPEC_RX_CONFLICT = UCS_BIT(1), /* second sender / lost count */
    UCP_PROTO_SPEC_RX_REVOKING = UCS_BIT(2), /* a cancel waits for REVOKE-ACKs */
    UCP_PROTO_SPEC_RX_TAKEN    = UCS_BIT(3)  /* an RTR was taken meanwhile */
};

/* Receiver side: one envelope, learned from an RTS */
typedef struct {
    ucs_list_link_t lru;
    ucp_tag_t       tag;
    uint64_t        ep_id;       /* our endpoint to the sender */
    uint64_t        epoch;       /* shifted into place */
    uint64_t        arrivals;    /* messages arrived in this epoch */
    unsigned        flags;
    unsigned        rtr_count;   /* RTRs outstanding: they pin the entry */
    ucs_list_link_t rtrs;        /* ucp_proto_spec_rreq_t with an RTR out */
    unsigned        revokes;     /* REVOKE-ACKs awaited */
    ucs_list_link_t cancels;     /* ucp_proto_spec_rreq_t waiting to cancel */
} ucp_proto_spec_rx_env_t;

/* Where a posted receive's RTR is, named once (X-macro): the state, and its
 * name in traces.  An RTR leaves the receive (back to NONE) when the sender
 * takes it (RTR-ACK), says it is dead (REVOKE-ACK), the message it stands
 * for arrives by the ordinary path, or its endpoint goes. */
#define UCP_PROTO_SPEC_RTR_STATES(_s) \
    _s(NONE,     "no RTR") \
    _s(QUEUED,   "RTR queued on the lane") \
    _s(OUT,      "RTR at the sender") \
    _s(REVOKING, "RTR revoked, REVOKE-ACK awaited")

typedef enum {
#define UCP_PROTO_SPEC_RTR_STATE_ENUM(_name, _desc) UCP_PROTO_SPEC_RTR_##_name,
    UCP_PROTO_SPEC_RTR_STATES(UCP_PROTO_SPEC_RTR_STATE_ENUM)
#undef UCP_PROTO_SPEC_RTR_STATE_ENUM
} ucp_proto_spec_rtr_state_t;

/* Receiver side: speculative state of one posted receive (rreq->recv.spec).
 * A user cancel deferred until the revoked RTRs are known dead is apart
 * from the RTR's state: the receive may still have its own RTR revoking,
 * or none. */
typedef struct ucp_proto_spec_rreq {
    ucp_request_t              *rreq;
    ucp_request_t              *rtr_req;  /* carries the RTR, owns its id */
    ucp_proto_spec_rx_env_t    *env;
    uint64_t                    pos;
    ucp_proto_spec_rtr_state_t  state;
    int                         cancel;   /* in env->cancels */
    ucs_list_link_t             rtr_list;    /* in env->rtrs but when NONE */
    ucs_list_link_t             cancel_list; /* in env->cancels */
    struct {
        void                    *buffer; /* the packed key, while the RTR */
        size_t                  size;    /* goes out */
    } rkey;
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
    struct {                             /* UCP v2 (spec_v2.c): */
        const ucp_proto_config_t *rtr_cfg; /* UCX's "rndv/rtr" for it */
        ucp_proto_config_t      cfg;       /* a copy, of protocol spec/rtr */
    } v2;
#endif
} ucp_proto_spec_rreq_t;



enum {
#define UCP_PROTO_SPEC_STAT_ENUM(_name, _words) UCP_PROTO_SPEC_STAT_##_name,
    UCP_PROTO_SPEC_COUNTERS(UCP_PROTO_SPEC_STAT_ENUM)
#undef UCP_PROTO_SPEC_STAT_ENUM
    UCP_PROTO_SPEC_STAT_LAST
};


KHASH_INIT(ucp_proto_spec_rx, uint64_t, ucp_proto_spec_rx_env_t*, 1,
           kh_int64_hash_func, kh_int64_hash_equal);

/* What a shared-memory peer's traffic asks of our sends to it (see
 * spec_send.c, decline); endpoints with neither are not in the table */
typedef struct ucp_proto_spec_peer {
    uint8_t                   stopped;   /* it stopped our RTRs */
    uint8_t                   fetches;   /* its RTRs still to decline since
                                            we fetched one of its messages */
} ucp_proto_spec_peer_t;

KHASH_INIT(ucp_proto_spec_peer, uint64_t, ucp_proto_spec_peer_t, 1,
           kh_int64_hash_func, kh_int64_hash_equal);

static inline khint_t ucp_proto_spec_tx_key_hash(ucp_proto_spec_tx_key_t key)
{
    return kh_int64_hash_func((uintptr_t)key.ep ^ (key.tag * 0x9e3779b97f4a7c15ull));
}

#define ucp_proto_spec_tx_key_equal(_a, _b) \
    (((_a).ep == (_b).ep) && ((_a).tag == (_b).tag))

KHASH_INIT(ucp_proto_spec_tx, ucp_proto_spec_tx_key_t, ucp_proto_spec_tx_env_t*,
           1, ucp_proto_spec_tx_key_hash, ucp_proto_spec_tx_key_equal);


#define UCP_PROTO_SPEC_CLAIM_NONE (-1) /* no claim page yet */

KHASH_INIT(ucp_proto_spec_page, int32_t, void*, 1, kh_int_hash_func,
           kh_int_hash_equal);

/* spec_v2.c: the first run of message lengths that v2 sends by "tag/rndv"
 * on an endpoint configuration; end 0: not learned yet */
typedef struct {
    size_t start;
    size_t end;
} ucp_proto_spec_v2_run_t;

/* Per worker */
typedef struct ucp_proto_spec_worker {
    ucp_proto_spec_worker_head_t head;    /* first: the inline hooks read it */
    ucp_worker_h              worker;
    ucp_proto_spec_config_t   config;
    uint64_t                  next_epoch;
    unsigned                  tx_bits[64]; /* envelopes behind each bit of */
    unsigned                  rx_bits[64]; /* head.tx_filter, rx_filter */
    khash_t(ucp_proto_spec_tx) tx;
    khash_t(ucp_proto_spec_rx) rx;
    khash_t(ucp_proto_spec_peer) peers;   /* see spec_send.c, decline */
    ucs_list_link_t           tx_lru;     /* most recent first */
    ucs_list_link_t           rx_lru;
    ucp_proto_spec_counters_t cnt;
    int                       v2;         /* on UCP's v2 protocols */
    ucs_list_link_t           v2_puts;    /* spec_v2.c, put configurations */
    ucp_proto_spec_v2_run_t   v2_rndv[UCP_WORKER_MAX_EP_CONFIG][2];
    int                       early;      /* in the early progress pass */
    struct {
        int32_t               shmid;      /* our claim page, -1 until used */
        volatile uint64_t     *words;
        uint16_t              *free;      /* stack of free slots */
        unsigned              num_free;
        khash_t(ucp_proto_spec_page) peers; /* shmid -> attached page */
        ucs_list_link_t       offers;     /* ucp_proto_spec_offer_t */
        uct_worker_cb_id_t    cb_id;
        ucs_time_t            delay;      /* UCX_SPEC_IDLE_COPY_DELAY */
        ucs_time_t            busy_until; /* the copies we claimed end */
    } claim;
    UCS_STATS_NODE_DECLARE(stats)
} ucp_proto_spec_worker_t;


/* A send's length: UCP's v2 protocols keep it in the iterator alone */
static UCS_F_ALWAYS_INLINE size_t
ucp_proto_spec_sreq_length(const ucp_request_t *sreq)
{
    const ucp_proto_spec_worker_t *spec = sreq->send.ep->worker->spec;

    return spec->v2 ? sreq->send.state.dt_iter.length : sreq->send.length;
}

/* Count @a _n on the worker's counter @a _name, and on its UCS stats twin */
#define UCP_PROTO_SPEC_COUNT(_spec, _name, _n) \
    do { \
        (_spec)->cnt._name += (_n); \
        UCS_STATS_UPDATE_COUNTER((_spec)->stats, \
                                 UCP_PROTO_SPEC_STAT_##_name, (_n)); \
    } while (0)


/* spec_env.c */
ucp_proto_spec_tx_env_t *
ucp_proto_spec_tx_env_get(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                          ucp_tag_t tag, int create);
void ucp_proto_spec_tx_env_drop_upto(ucp_proto_spec_worker_t *spec,
                                     ucp_proto_spec_tx_env_t *env,
                                     uint64_t pos);
ucp_proto_spec_rtrq_entry_t *
ucp_proto_spec_tx_env_find(ucp_proto_spec_tx_env_t *env, uint64_t pos);
void ucp_proto_spec_tx_env_remove(ucp_proto_spec_worker_t *spec,
                                  ucp_proto_spec_tx_env_t *env);
ucp_proto_spec_rx_env_t *
ucp_proto_spec_rx_env_get(ucp_proto_spec_worker_t *spec, ucp_tag_t tag,
                          int create);
void ucp_proto_spec_env_cleanup(ucp_proto_spec_worker_t *spec);
void ucp_proto_spec_peer_stopped(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                                 int stopped);
void ucp_proto_spec_peer_fetched(ucp_proto_spec_worker_t *spec, ucp_ep_h ep);
int ucp_proto_spec_peer_declines(ucp_proto_spec_worker_t *spec, ucp_ep_h ep);
void ucp_proto_spec_peer_forget(ucp_proto_spec_worker_t *spec, ucp_ep_h ep);

/* spec_report.c: a report line of counters, for UCX_SPEC_REPORT and
 * UCX_SPEC_HOTBUF_PRINT; each counter's words and its place in @a cnt */
typedef struct {
    const char *words;
    size_t     offset;
} ucp_proto_spec_counter_info_t;

void ucp_proto_spec_report(ucp_worker_h worker,
                           const ucp_proto_spec_counter_info_t *info,
                           size_t count, const void *cnt);

/* spec_layout.c: the sender and ignore masks of the MPI library in the
 * process when it does not pass tag_sender_mask (MPICH): 1 if known; the
 * parser alone, for tests */
int ucp_proto_spec_layout_detect(uint64_t *sender_mask_p,
                                 uint64_t *ignore_mask_p);
int ucp_proto_spec_layout_parse(const char *version, uint64_t *sender_mask_p,
                                uint64_t *ignore_mask_p);

/* spec_ctl.c: what both sides call */
ucs_status_t ucp_proto_spec_ctl_send(ucp_ep_h ep,
                                     ucp_proto_spec_msg_type_t type,
                                     const void *hdr, size_t length);
/* The same in two steps, for a message that must not fail once something
 * else started: the request, or NULL without memory; then its send, or its
 * release if it is not wanted after all */
ucp_request_t *ucp_proto_spec_ctl_prepare(ucp_ep_h ep,
                                          ucp_proto_spec_msg_type_t type,
                                          const void *hdr, size_t length);
void ucp_proto_spec_ctl_post(ucp_request_t *req);
void ucp_proto_spec_ctl_discard(ucp_request_t *req);
/* Ends a message of @a length bytes at @a dest with its type; the length to
 * send (a message needs one byte more than its header and key) */
size_t ucp_proto_spec_msg_seal(void *dest, size_t length,
                               ucp_proto_spec_msg_type_t type);

/* Each message's handler, called with the type byte taken off */
#define UCP_PROTO_SPEC_MSG_HANDLER(_type, _name, _hdr) \
    ucs_status_t ucp_proto_spec_##_name##_handler(void *arg, void *data, \
                                                  size_t length, \
                                                  unsigned flags);
UCP_PROTO_SPEC_MSGS(UCP_PROTO_SPEC_MSG_HANDLER)
#undef UCP_PROTO_SPEC_MSG_HANDLER
void ucp_proto_spec_early_progress(ucp_proto_spec_worker_t *spec);
ssize_t ucp_proto_spec_rkey_pack(ucp_ep_h ep, ucp_md_map_t md_map,
                                 ucp_proto_spec_memh_t memh, void *address,
                                 size_t length, void *buffer);

/* spec_claim.c: the idle side copies */
int ucp_proto_spec_lane_is_shm(ucp_ep_h ep, ucp_lane_index_t lane);
int ucp_proto_spec_idle_copy_usable(ucp_proto_spec_worker_t *spec,
                                    ucp_ep_h ep);
/* The offering side: a slot of its claim page (UCS_ERR_NO_RESOURCE: copy
 * now, as without), then its own offer_put/_get (own = 1) before the message
 * goes, and claim_close if the message cannot go.  The peer: offer_put/_get
 * from the message (own = 0); a failure there leaves the copy to the
 * offering side.  Only the caller knows which side it is: on a loopback
 * endpoint the peer's offer names a slot of our own page. */
ucs_status_t ucp_proto_spec_claim_open(ucp_proto_spec_worker_t *spec,
                                       ucp_proto_spec_claim_ref_t *ref);
void ucp_proto_spec_claim_close(ucp_proto_spec_worker_t *spec,
                                const ucp_proto_spec_claim_ref_t *ref);
ucs_status_t ucp_proto_spec_offer_put(ucp_proto_spec_worker_t *spec,
                                      ucp_ep_h ep,
                                      const ucp_proto_spec_claim_ref_t *ref,
                                      int own, const ucp_rndv_rtr_hdr_t *rtr,
                                      const void *rkey, size_t rkey_length);
ucs_status_t ucp_proto_spec_offer_get(ucp_proto_spec_worker_t *spec,
                                      ucp_ep_h ep,
                                      const ucp_proto_spec_claim_ref_t *ref,
                                      int own, ucp_request_t *rreq,
                                      ucp_request_t *carrier,
                                      const ucp_rndv_rts_hdr_t *rts,
                                      const void *rkey, size_t rkey_length);
void ucp_proto_spec_claim_ep_cleanup(ucp_proto_spec_worker_t *spec,
                                     ucp_ep_h ep);
void ucp_proto_spec_claim_cleanup(ucp_proto_spec_worker_t *spec);

/* spec_recv.c */
void ucp_proto_spec_recv_ep_cleanup(ucp_proto_spec_worker_t *spec,
                                    ucp_ep_h ep);
/* Sends the RTR of @a carrier on @a lane (its progress, v1 or v2) */
ucs_status_t ucp_proto_spec_rtr_send(ucp_request_t *carrier,
                                     ucp_lane_index_t lane);
int ucp_proto_spec_carrier_purge(ucp_request_t *req, ucs_status_t status,
                                 int id_released);

/* spec_send.c: the RTR a rendezvous send takes, or NULL (the send is
 * numbered either way); its RTR-ACK is sent by the caller */
ucp_proto_spec_rtrq_entry_t *
ucp_proto_spec_send_take(ucp_proto_spec_worker_t *spec, ucp_request_t *sreq,
                         ucp_proto_spec_tx_env_t **env_p);
void ucp_proto_spec_send_rts(ucp_proto_spec_worker_t *spec,
                             ucp_request_t *sreq, ucp_proto_spec_tx_env_t *env,
                             ucp_proto_spec_rtrq_entry_t *entry);
size_t ucp_proto_spec_rtr_build(ucp_request_t *sreq,
                                const ucp_proto_spec_rtrq_entry_t *entry,
                                ucp_rndv_rtr_hdr_t *hdr);
void ucp_proto_spec_taken(ucp_proto_spec_worker_t *spec,
                          ucp_proto_spec_tx_env_t *env);
void ucp_proto_spec_rtr_ack_init(ucp_proto_spec_rtr_ack_hdr_t *ack,
                                 const ucp_request_t *sreq,
                                 const ucp_proto_spec_rtrq_entry_t *entry);
void ucp_proto_spec_rtrq_remove(ucp_proto_spec_tx_env_t *env,
                                ucp_proto_spec_rtrq_entry_t *entry);
/* Shared memory: sends @a ack with an offer of the copy (spec_claim.c)
 * instead of the data; zero if it cannot be offered */
int ucp_proto_spec_send_offer(ucp_proto_spec_worker_t *spec,
                              ucp_request_t *sreq,
                              ucp_proto_spec_tx_env_t *env,
                              ucp_proto_spec_rtrq_entry_t *entry,
                              const ucp_proto_spec_rtr_ack_hdr_t *ack);

/* spec_v2.c: the wire act on UCP's v2 protocols (UCX >= 1.18; the stubs of
 * older versions are in spec_compat.h) */
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
const ucp_proto_config_t *
ucp_proto_spec_v2_rtr_config(ucp_ep_h ep, ucp_request_t *rreq, size_t length);
void ucp_proto_spec_v2_carrier_init(ucp_request_t *carrier, ucp_ep_h ep,
                                    ucp_request_t *rreq,
                                    ucp_proto_spec_rreq_t *sr,
                                    const ucp_proto_config_t *rtr_cfg);
ucs_status_t ucp_proto_spec_v2_am_send(ucp_request_t *carrier,
                                       ucp_lane_index_t lane,
                                       uct_pack_callback_t pack, size_t length);
/* The receive's iterator becomes @a carrier's, which is UCX's @a rtr_cfg
 * from then on, as UCX's RTS path moves it */
void ucp_proto_spec_v2_carrier_own(ucp_request_t *carrier, ucp_request_t *rreq,
                                   const ucp_proto_config_t *rtr_cfg,
                                   size_t length);
/* At the RTR-ACK: nonzero if that completed the receive */
int ucp_proto_spec_v2_rtr_taken(ucp_request_t *carrier, ucp_request_t *rreq,
                                const ucp_proto_config_t *rtr_cfg,
                                size_t length);
void ucp_proto_spec_v2_offer_carrier_init(ucp_request_t *carrier, ucp_ep_h ep,
                                          ucp_request_t *rreq,
                                          const ucp_rndv_rts_hdr_t *rts);
void ucp_proto_spec_v2_carrier_return(ucp_request_t *carrier,
                                      ucp_request_t *rreq);
size_t ucp_proto_spec_v2_sreq_key_size(const ucp_request_t *sreq);
ssize_t ucp_proto_spec_v2_sreq_key_pack(ucp_request_t *sreq, void *buffer,
                                        uint64_t *address_p);
void ucp_proto_spec_v2_carrier_dead(ucp_request_t *carrier);
int ucp_proto_spec_v2_sreq_fits(const ucp_request_t *sreq);
int ucp_proto_spec_v2_predict_rndv(ucp_ep_h ep, size_t length);
/* Whether v2 will send this tag send of @a length as a rendezvous */
int ucp_proto_spec_v2_send_predict_rndv(ucp_ep_h ep,
                                        const ucp_request_param_t *param,
                                        size_t length);
void ucp_proto_spec_v2_cleanup(ucp_proto_spec_worker_t *spec);

/* Another of the selection's protocols in place of the one v2 selected */
typedef struct {
    ucs_list_link_t          list;
    const ucp_proto_config_t *selected;
    const ucp_proto_t        *proto;
    ucp_proto_config_t       cfg;      /* proto NULL: the selection has none */
} ucp_proto_spec_v2_alt_t;

ucp_proto_spec_v2_alt_t *
ucp_proto_spec_v2_alt_get(ucs_list_link_t *cache, ucp_worker_h worker,
                          const ucp_proto_select_elem_t *select_elem,
                          const ucp_proto_config_t *selected,
                          const ucp_proto_t *proto);
const ucp_proto_config_t *
ucp_proto_spec_v2_alt_config(const ucp_proto_spec_v2_alt_t *alt, ucp_ep_h ep,
                             size_t length);
void ucp_proto_spec_v2_alt_cleanup(ucs_list_link_t *cache);
#  define ucp_proto_spec_v2_rreq_rtr_config(_sr) ((_sr)->v2.rtr_cfg)
#endif

#endif
