/**
 * ucx-spec: a connection between two specrdv shm interfaces, as the
 * shared-memory writer sees it.
 *
 * The connection layer's peer (uct_specrdv_peer_t) carries both directions;
 * this adds where they live in shared memory: the peer's segment, attached,
 * our entry in its peer table and our ring in its ring pool (sending), its
 * entry in ours (receiving).  It lives as long as the interface: a remote
 * interface's entry and ring stay claimed while we may still send to it.
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


struct uct_specrdv_shm_peer {
    uct_specrdv_peer_t    super;
    uint64_t              nonce;      /* remote interface instance */
    pid_t                 pid;
    uct_specrdv_shm_seg_t seg;        /* its segment, attached */
    int                   remote_id;  /* our id in its table, or -1 */
    int                   tx_ring;    /* our ring in its segment, or -1 */
    int                   local_id;   /* its id in our table, or -1 */
};


extern const uct_specrdv_wire_ops_t uct_specrdv_shm_wire_ops;


ucs_status_t uct_specrdv_shm_peer_get(uct_specrdv_shm_iface_t *iface,
                                      const uct_specrdv_shm_iface_addr_t *addr,
                                      uct_specrdv_shm_peer_t **peer_p);

/* Our entry in its peer table, claimed at the first need */
ucs_status_t uct_specrdv_shm_peer_claim_id(uct_specrdv_shm_iface_t *iface,
                                           uct_specrdv_shm_peer_t *peer);

void uct_specrdv_shm_peer_destroy(uct_specrdv_shm_iface_t *iface,
                                  uct_specrdv_shm_peer_t *peer);

#endif
