/**
 * ucx-spec: a connection between two specrdv shm interfaces.
 *
 * One peer object per remote interface carries both directions, as a
 * connection does in the paper: what we send (our id in its table, our ring
 * in its segment, the PSN we assign) and what it sends us (its id here, its
 * ring in our polling set, the ESN we expect).  Every endpoint to the same
 * interface shares it, so its order covers them all and the credits of one
 * direction ride on the messages of the other.  It lives as long as the
 * interface: a remote interface's entry and ring stay claimed while we may
 * still send to it.
 *
 * See file LICENSE for terms.
 */

#ifndef UCT_SPECRDV_SHM_PEER_H_
#define UCT_SPECRDV_SHM_PEER_H_

#include "specrdv_shm_iface.h"


/* Control operations, in the am_id of a UCT_SPECRDV_MSG_CTRL message */
enum {
    UCT_SPECRDV_SHM_CTRL_CONNECT    = 1, /* first message: who we are */
    UCT_SPECRDV_SHM_CTRL_RING       = 2, /* later messages may use a ring */
    UCT_SPECRDV_SHM_CTRL_DISCONNECT = 3  /* last message */
};

typedef struct uct_specrdv_shm_ctrl {
    uint64_t nonce;
    int32_t  shmid;
    int32_t  pid;
    uint32_t ring;
} UCS_S_PACKED uct_specrdv_shm_ctrl_t;


enum {
    UCT_SPECRDV_SHM_PEER_CONNECTED  = UCS_BIT(0), /* CONNECT sent */
    UCT_SPECRDV_SHM_PEER_RING_READY = UCS_BIT(1), /* RING sent, ring usable */
    UCT_SPECRDV_SHM_PEER_FAILED     = UCS_BIT(2)
};


struct uct_specrdv_shm_peer {
    ucs_list_link_t       list;       /* in the interface's peers */
    uint64_t              nonce;      /* remote interface instance */
    pid_t                 pid;
    uct_specrdv_shm_seg_t seg;        /* its segment, attached */
    uct_specrdv_conn_t    conn;
    uint8_t               flags;
    /* sending */
    int                   remote_id;  /* our id in its table */
    int                   tx_ring;    /* our ring in its segment, or -1 */
    int                   fb_sends;   /* fallback sends since a ring attempt */
    uct_specrdv_ring_tx_t tx;
    /* receiving */
    int                   local_id;   /* its id in our table, or -1 */
    int                   rx_ring;    /* its ring in our segment, or -1 */
    ucs_list_link_t       eps;        /* our endpoints to it */
};


/* Where the payload of one message goes, between tx_begin and tx_end */
typedef struct uct_specrdv_shm_tx {
    void     *payload;
    uint64_t fifo_pos;
    int      ring;      /* sent through the ring, else through the FIFO */
} uct_specrdv_shm_tx_t;


ucs_status_t uct_specrdv_shm_peer_get(uct_specrdv_shm_iface_t *iface,
                                      const uct_specrdv_shm_iface_addr_t *addr,
                                      uct_specrdv_shm_peer_t **peer_p);

void uct_specrdv_shm_peer_destroy(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer);

/**
 * Find room for a message of @a length bytes: a ring slot when the peer is in
 * the receiver's polling set and has a credit, else a FIFO element.
 * @return UCS_OK, or UCS_ERR_NO_RESOURCE when both are full.
 */
ucs_status_t uct_specrdv_shm_peer_tx_begin(uct_specrdv_shm_iface_t *iface,
                                           uct_specrdv_shm_peer_t *peer,
                                           size_t length,
                                           uct_specrdv_shm_tx_t *tx);

void uct_specrdv_shm_peer_tx_end(uct_specrdv_shm_iface_t *iface,
                                 uct_specrdv_shm_peer_t *peer,
                                 uct_specrdv_shm_tx_t *tx, uint8_t type,
                                 uint8_t am_id, uint32_t length);

int uct_specrdv_shm_peer_can_send(uct_specrdv_shm_peer_t *peer);

/* A message of a control type arrived from the peer, in order */
void uct_specrdv_shm_peer_rx_ctrl(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer,
                                  const uct_specrdv_hdr_t *hdr,
                                  const void *payload);

/* CONNECT from a sender we do not know yet, by its id here */
void uct_specrdv_shm_peer_rx_connect(uct_specrdv_shm_iface_t *iface,
                                     unsigned src, const uct_specrdv_hdr_t *hdr,
                                     const void *payload);

/* Broken peer: stop reading it and fail our endpoints to it */
void uct_specrdv_shm_peer_fail(uct_specrdv_shm_iface_t *iface,
                               uct_specrdv_shm_peer_t *peer,
                               ucs_status_t status);

/* Leave the polling set; the ring returns to the pool once its slots are */
void uct_specrdv_shm_peer_rx_ring_close(uct_specrdv_shm_iface_t *iface,
                                        uct_specrdv_shm_peer_t *peer);

/* Return a closing ring to the pool if none of its slots is still held */
void uct_specrdv_shm_peer_rx_ring_reclaim(uct_specrdv_shm_iface_t *iface,
                                          unsigned index);

#endif
