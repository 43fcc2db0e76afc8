/**
 * ucx-spec: the verbs writer's connections, from the peer's making to its
 * reaping: how two interfaces connect an RC QP, how a peer's death shows,
 * how a peer that leaves says so.  The send path (specrdv_verbs_wire.c) is
 * called from here and never calls back.
 *
 * UCX_TLS=specrdv must work alone, so the transport connects to an interface
 * (UCT_IFACE_FLAG_CONNECT_TO_IFACE): UCP hands us the peer's interface
 * address and nothing else.  The QP is made at the first send, over a TCP
 * connection to the port in that address, in three messages:
 *
 *     REQ  initiator -> acceptor  its QP, GID and memory; the acceptor's QP
 *                                 goes to RTS
 *     REP  acceptor -> initiator  the same; the initiator's QP goes to RTS
 *     RTU  initiator -> acceptor  the initiator's QP can receive: the
 *                                 acceptor may send
 *
 * The TCP connection then stays open and idle.  A peer process that dies
 * closes it, which we read as end of file: that is how UCX's peer failure
 * handling learns of it, long before a QP's retries run out.  UCX's async
 * thread watches the sockets (as uct_tcp_iface watches its listening
 * socket) and only raises a flag; progress polls them when the flag is up,
 * and at every call while a handshake is under way.  Polling them every so
 * many calls instead cost a poll() whose price grows with the peers: under
 * the emulated guest, 2.3 us per progress call at 16 peers, six times the
 * polling set itself.
 *
 * Connecting over a UD QP instead would need a datagram protocol with its own
 * retries and would still not see a dead peer; rdmacm would need an IP
 * address per port too, and an event channel per interface.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_verbs.h"

#include <ucs/async/async.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/sock.h>
#include <ucs/time/time.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>


#define UCT_SPECRDV_VERBS_WIREUP_MAGIC  0x53525631u /* "SRV1" */


enum {
    UCT_SPECRDV_VERBS_WIREUP_REQ = 1,
    UCT_SPECRDV_VERBS_WIREUP_REP = 2,
    UCT_SPECRDV_VERBS_WIREUP_RTU = 3
};


/* An accepted socket whose request has not arrived whole yet */
typedef struct uct_specrdv_verbs_accepting {
    ucs_list_link_t           list;
    uct_specrdv_verbs_qp_t    qp;
} uct_specrdv_verbs_accepting_t;


static void uct_specrdv_verbs_wireup_event(int fd, ucs_event_set_types_t events,
                                           void *arg)
{
    ((uct_specrdv_verbs_iface_t*)arg)->wireup_event = 1;
}

/* Have the async thread raise the flag when @a fd has something to read:
 * a connection, a handshake message, or its end */
static ucs_status_t uct_specrdv_verbs_watch(uct_specrdv_verbs_iface_t *iface,
                                            int fd)
{
    ucs_async_context_t *async = iface->super.super.worker->async;
    ucs_status_t status;

    status = ucs_async_set_event_handler(async->mode, fd,
                                         UCS_EVENT_SET_EVREAD |
                                         UCS_EVENT_SET_EVERR |
                                         UCS_EVENT_SET_EDGE_TRIGGERED,
                                         uct_specrdv_verbs_wireup_event, iface,
                                         async);
    if (status != UCS_OK) {
        ucs_error("specrdv: cannot watch socket %d: %s", fd,
                  ucs_status_string(status));
    }
    return status;
}

/* Stop watching a socket, then close it */
static void uct_specrdv_verbs_close(int *fd_p)
{
    ucs_async_remove_handler(*fd_p, 1);
    close(*fd_p);
    *fd_p = -1;
}

static int uct_specrdv_verbs_socket(void)
{
    int fd, one = 1;

    fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        ucs_error("specrdv: socket() failed: %m");
        return -1;
    }

    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

ucs_status_t uct_specrdv_verbs_conn_peer_get(uct_specrdv_verbs_iface_t *iface,
                                             uint64_t nonce,
                                             const struct sockaddr_in *addr,
                                             uct_specrdv_verbs_peer_t **peer_p)
{
    uct_specrdv_verbs_md_t *md = uct_specrdv_verbs_iface_md(iface);
    size_t fb_bytes            = iface->config.fb_bufs * iface->fb_size;
    uct_specrdv_peer_t *generic;
    uct_specrdv_verbs_peer_t *peer;
    char ip[INET_ADDRSTRLEN];
    ucs_status_t status;
    int id;

    ucs_list_for_each(generic, &iface->super.conns.peers, list) {
        peer = uct_specrdv_verbs_peer(generic);
        if (peer->nonce == nonce) {
            *peer_p = peer;
            return UCS_OK;
        }
    }

    inet_ntop(AF_INET, &addr->sin_addr, ip, sizeof(ip));
    for (id = 0; (id < iface->config.max_peers) && (iface->by_id[id] != NULL);
         ++id) {
    }
    if (id == iface->config.max_peers) {
        ucs_error("specrdv: %s:%u cannot connect: this interface has "
                  "UCX_SPECRDV_VERBS_MAX_PEERS=%u peers", ip,
                  ntohs(addr->sin_port), iface->config.max_peers);
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    peer = ucs_calloc(1, sizeof(*peer), "specrdv_verbs_peer");
    if (peer == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    peer->fb_sn = ucs_calloc(iface->config.fb_bufs, sizeof(*peer->fb_sn),
                             "specrdv_verbs_fb_sn");
    if ((peer->fb_sn == NULL) ||
        (ucs_posix_memalign((void**)&peer->fb_tx, UCS_SYS_CACHE_LINE_SIZE,
                            fb_bytes, "specrdv_verbs_fb_tx") != 0)) {
        status = UCS_ERR_NO_MEMORY;
        goto err_free;
    }

    peer->fb_tx_mr = ibv_reg_mr(md->pd, peer->fb_tx, fb_bytes,
                                IBV_ACCESS_LOCAL_WRITE);
    if (peer->fb_tx_mr == NULL) {
        ucs_error("specrdv: ibv_reg_mr(%zu) failed: %m", fb_bytes);
        status = UCS_ERR_IO_ERROR;
        goto err_free;
    }

    peer->fb_wr.sge.lkey          = peer->fb_tx_mr->lkey;
    peer->fb_wr.wr.sg_list        = &peer->fb_wr.sge;
    peer->fb_wr.wr.num_sge        = 1;
    peer->fb_wr.wr.opcode         = IBV_WR_SEND;
    peer->nonce                   = nonce;
    peer->addr                    = *addr;
    peer->local_id                = id;
    peer->qps[0].fd               = -1;
    peer->qps[1].fd               = -1;
    peer->tx_ring                 = -1;
    ucs_queue_head_init(&peer->comps);
    iface->words[id].answer       = 0;
    iface->words[id].credits      = 0;
    iface->words[id].fb_delivered = 0;
    iface->by_id[id]              = peer;
    uct_specrdv_peer_init(&iface->super.conns, &peer->super);
    snprintf(peer->super.name, sizeof(peer->super.name), "%s:%u", ip,
             ntohs(addr->sin_port));
    *peer_p = peer;
    return UCS_OK;

err_free:
    ucs_free(peer->fb_tx);
    ucs_free(peer->fb_sn);
    ucs_free(peer);
    return status;
}

ucs_status_t uct_specrdv_verbs_conn_listen(uct_specrdv_verbs_iface_t *iface)
{
    unsigned max_fds = 2 * iface->config.max_peers +
                       UCT_SPECRDV_VERBS_MAX_ACCEPTING + 1;
    struct sockaddr_in addr = {
        .sin_family      = AF_INET,
        .sin_addr.s_addr = iface->ip,
        .sin_port        = 0
    };
    socklen_t len = sizeof(addr);
    char ip[INET_ADDRSTRLEN];

    ucs_list_head_init(&iface->accepting);
    iface->wireup.fds    = ucs_calloc(max_fds, sizeof(*iface->wireup.fds),
                                      "specrdv_verbs_pollfds");
    iface->wireup.owners = ucs_calloc(max_fds, sizeof(*iface->wireup.owners),
                                      "specrdv_verbs_pollowners");
    if ((iface->wireup.fds == NULL) || (iface->wireup.owners == NULL)) {
        goto err_free;
    }

    iface->listen_fd = uct_specrdv_verbs_socket();
    if (iface->listen_fd < 0) {
        goto err_free;
    }

    if ((bind(iface->listen_fd, (struct sockaddr*)&addr, sizeof(addr)) != 0) ||
        (listen(iface->listen_fd, SOMAXCONN) != 0) ||
        (getsockname(iface->listen_fd, (struct sockaddr*)&addr, &len) != 0)) {
        ucs_error("specrdv: cannot listen on %s: %m",
                  inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof(ip)));
        close(iface->listen_fd);
        goto err_free;
    }

    if (uct_specrdv_verbs_watch(iface, iface->listen_fd) != UCS_OK) {
        close(iface->listen_fd);
        goto err_free;
    }

    iface->port = addr.sin_port;
    return UCS_OK;

err_free:
    ucs_free(iface->wireup.owners);
    ucs_free(iface->wireup.fds);
    return UCS_ERR_IO_ERROR;
}

static void uct_specrdv_verbs_qp_close(uct_specrdv_verbs_iface_t *iface,
                                       uct_specrdv_verbs_qp_t *qp)
{
    if (qp->fd >= 0) {
        uct_specrdv_verbs_close(&qp->fd);
    }

    if (qp->qp != NULL) {
        if (ibv_destroy_qp(qp->qp) != 0) {
            ucs_warn("specrdv: ibv_destroy_qp failed: %m");
        }
        qp->qp = NULL;
    }

    if ((qp->state != UCT_SPECRDV_VERBS_QP_NONE) &&
        (qp->state != UCT_SPECRDV_VERBS_QP_READY)) {
        --iface->wireup_count;
    }
    qp->state = UCT_SPECRDV_VERBS_QP_NONE;
}

void uct_specrdv_verbs_conn_cleanup(uct_specrdv_verbs_iface_t *iface)
{
    uct_specrdv_verbs_accepting_t *acc, *tmp;

    ucs_list_for_each_safe(acc, tmp, &iface->accepting, list) {
        uct_specrdv_verbs_qp_close(iface, &acc->qp);
        ucs_list_del(&acc->list);
        ucs_free(acc);
    }
    uct_specrdv_verbs_close(&iface->listen_fd);
    ucs_free(iface->wireup.owners);
    ucs_free(iface->wireup.fds);
}

static void uct_specrdv_verbs_qp_set_state(uct_specrdv_verbs_iface_t *iface,
                                           uct_specrdv_verbs_qp_t *qp,
                                           uct_specrdv_verbs_qp_state_t state)
{
    int was_busy = (qp->state != UCT_SPECRDV_VERBS_QP_NONE) &&
                   (qp->state != UCT_SPECRDV_VERBS_QP_READY);
    int is_busy  = (state != UCT_SPECRDV_VERBS_QP_NONE) &&
                   (state != UCT_SPECRDV_VERBS_QP_READY);

    iface->wireup_count += is_busy - was_busy;
    qp->state            = state;
}

struct ibv_qp *uct_specrdv_verbs_conn_create_qp(uct_specrdv_verbs_iface_t *iface,
                                                unsigned *max_inline_p)
{
    struct ibv_qp_init_attr init_attr = {
        .send_cq             = iface->send_cq,
        .recv_cq             = iface->recv_cq,
        .srq                 = iface->srq,
        .cap.max_send_wr     = iface->config.tx_queue_len,
        .cap.max_send_sge    = UCT_SPECRDV_VERBS_MAX_IOV,
        .cap.max_inline_data = iface->config.max_inline,
        .qp_type             = IBV_QPT_RC,
        .sq_sig_all          = 0
    };
    struct ibv_qp *qp;

    qp = ibv_create_qp(uct_specrdv_verbs_iface_md(iface)->pd, &init_attr);
    if (qp == NULL) {
        ucs_error("specrdv: cannot create an RC QP with %u work requests and "
                  "%u bytes inline: %m", iface->config.tx_queue_len,
                  iface->config.max_inline);
        return NULL;
    }

    *max_inline_p = init_attr.cap.max_inline_data;
    return qp;
}

static ucs_status_t uct_specrdv_verbs_qp_create(uct_specrdv_verbs_iface_t *iface,
                                                uct_specrdv_verbs_qp_t *qp)
{
    unsigned max_inline;
    struct ibv_qp_attr attr = {
        .qp_state        = IBV_QPS_INIT,
        .pkey_index      = 0,
        .port_num        = iface->port_num,
        .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
                           IBV_ACCESS_REMOTE_READ
    };

    qp->qp = uct_specrdv_verbs_conn_create_qp(iface, &max_inline);
    if (qp->qp == NULL) {
        return UCS_ERR_IO_ERROR;
    }

    if (ibv_modify_qp(qp->qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
                                     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS) != 0) {
        ucs_error("specrdv: QP 0x%x to INIT failed: %m", qp->qp->qp_num);
        ibv_destroy_qp(qp->qp);
        qp->qp = NULL;
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

/* INIT -> RTR -> RTS toward the remote QP the message describes */
static ucs_status_t
uct_specrdv_verbs_qp_connect(uct_specrdv_verbs_iface_t *iface,
                             uct_specrdv_verbs_qp_t *qp,
                             const uct_specrdv_verbs_wireup_msg_t *msg)
{
    uct_specrdv_verbs_md_t *md = uct_specrdv_verbs_iface_md(iface);
    struct ibv_qp_attr attr;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state              = IBV_QPS_RTR;
    attr.path_mtu              = ucs_min(iface->path_mtu,
                                         (enum ibv_mtu)msg->path_mtu);
    attr.dest_qp_num           = msg->qpn;
    attr.rq_psn                = 0;
    attr.max_dest_rd_atomic    = ucs_max(md->dev_attr.max_qp_rd_atom, 1);
    attr.min_rnr_timer         = 12; /* 0.64 ms */
    attr.ah_attr.is_global     = 1;
    attr.ah_attr.port_num      = iface->port_num;
    attr.ah_attr.grh.hop_limit = 64;
    attr.ah_attr.grh.sgid_index = iface->gid_index;
    memcpy(attr.ah_attr.grh.dgid.raw, msg->gid, sizeof(msg->gid));
    if (ibv_modify_qp(qp->qp, &attr,
                      IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
                      IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                      IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        ucs_error("specrdv: QP 0x%x to RTR failed: %m", qp->qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state      = IBV_QPS_RTS;
    attr.timeout       = iface->config.timeout;
    attr.retry_cnt     = iface->config.retry_count;
    attr.rnr_retry     = 7; /* the fallback channel's flow control: for ever */
    attr.sq_psn        = 0;
    attr.max_rd_atomic = ucs_max(md->dev_attr.max_qp_init_rd_atom, 1);
    if (ibv_modify_qp(qp->qp, &attr,
                      IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                      IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        ucs_error("specrdv: QP 0x%x to RTS failed: %m", qp->qp->qp_num);
        return UCS_ERR_IO_ERROR;
    }

    return UCS_OK;
}

static ucs_status_t
uct_specrdv_verbs_wireup_send(uct_specrdv_verbs_iface_t *iface,
                              uct_specrdv_verbs_peer_t *peer,
                              uct_specrdv_verbs_qp_t *qp, uint8_t type)
{
    uct_specrdv_verbs_wireup_msg_t msg = {
        .magic      = UCT_SPECRDV_VERBS_WIREUP_MAGIC,
        .type       = type,
        .path_mtu   = iface->path_mtu,
        .port       = iface->port,
        .nonce      = iface->nonce,
        .ip         = iface->ip,
        .qpn        = qp->qp->qp_num,
        .your_id    = peer->local_id,
        .num_slots  = iface->super.conns.geom.num_slots,
        .slot_size  = iface->super.conns.geom.slot_size,
        .rings      = (uintptr_t)iface->rx_mem,
        .rings_rkey = iface->rx_mr->rkey,
        .words      = (uintptr_t)iface->words,
        .words_rkey = iface->words_mr->rkey
    };

    memcpy(msg.gid, iface->gid.raw, sizeof(msg.gid));
    /* a new connection's socket buffer takes a message this small whole */
    if (send(qp->fd, &msg, sizeof(msg), MSG_NOSIGNAL) != sizeof(msg)) {
        ucs_error("specrdv: wireup to %s failed: %m", peer->super.name);
        return UCS_ERR_IO_ERROR;
    }
    return UCS_OK;
}

/* Read into qp->rx_msg; UCS_OK once whole, UCS_INPROGRESS before,
 * UCS_ERR_CONNECTION_RESET at end of file or error */
static ucs_status_t uct_specrdv_verbs_wireup_recv(uct_specrdv_verbs_qp_t *qp)
{
    ssize_t ret;

    ret = recv(qp->fd, UCS_PTR_BYTE_OFFSET(&qp->rx_msg, qp->rx_length),
               sizeof(qp->rx_msg) - qp->rx_length, 0);
    if (ret > 0) {
        qp->rx_length += ret;
        if (qp->rx_length < sizeof(qp->rx_msg)) {
            return UCS_INPROGRESS;
        }
        qp->rx_length = 0;
        return UCS_OK;
    }

    if ((ret < 0) && ((errno == EAGAIN) || (errno == EINTR))) {
        return UCS_INPROGRESS;
    }

    return UCS_ERR_CONNECTION_RESET;
}

static int uct_specrdv_verbs_wireup_valid(uct_specrdv_verbs_iface_t *iface,
                                          const uct_specrdv_verbs_wireup_msg_t *msg,
                                          uint8_t type)
{
    if ((msg->magic != UCT_SPECRDV_VERBS_WIREUP_MAGIC) ||
        (msg->type != type)) {
        ucs_error("specrdv: invalid wireup message (magic 0x%x type %u)",
                  msg->magic, msg->type);
        return 0;
    }

    if ((type != UCT_SPECRDV_VERBS_WIREUP_RTU) &&
        (msg->slot_size != iface->super.conns.geom.slot_size)) {
        ucs_error("specrdv: peer uses %u-byte slots, this process %zu",
                  msg->slot_size, iface->super.conns.geom.slot_size);
        return 0;
    }

    return 1;
}

/* What the REQ or REP says of the peer's memory and of us there */
static void uct_specrdv_verbs_peer_learn(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer,
                                         const uct_specrdv_verbs_wireup_msg_t *msg)
{
    peer->super.src           = msg->your_id;
    peer->rings               = msg->rings;
    peer->rings_rkey          = msg->rings_rkey;
    peer->words               = msg->words;
    peer->words_rkey          = msg->words_rkey;
    peer->geom                = iface->super.conns.geom;
    peer->geom.num_slots      = msg->num_slots;
}

static void uct_specrdv_verbs_qp_ready(uct_specrdv_verbs_iface_t *iface,
                                       uct_specrdv_verbs_peer_t *peer,
                                       uct_specrdv_verbs_qp_t *qp)
{
    uct_specrdv_verbs_qp_set_state(iface, qp, UCT_SPECRDV_VERBS_QP_READY);
    if (peer->tx_qp == NULL) {
        peer->tx_qp = qp;
        ucs_debug("specrdv: connected to %s on QP 0x%x", peer->super.name,
                  qp->qp->qp_num);
        uct_specrdv_verbs_fb_send_waiting(iface, peer);
    }
}

ucs_status_t uct_specrdv_verbs_conn_connect(uct_specrdv_verbs_iface_t *iface,
                                              uct_specrdv_verbs_peer_t *peer)
{
    uct_specrdv_verbs_qp_t *qp = &peer->qps[UCT_SPECRDV_VERBS_QP_OUT];
    ucs_status_t status;

    if (ucs_likely(peer->tx_qp != NULL)) {
        return UCS_OK;
    }

    if ((qp->state != UCT_SPECRDV_VERBS_QP_NONE) ||
        (peer->qps[UCT_SPECRDV_VERBS_QP_IN].state !=
         UCT_SPECRDV_VERBS_QP_NONE) ||
        (peer->super.flags & UCT_SPECRDV_PEER_FAILED)) {
        return UCS_INPROGRESS;
    }

    status = uct_specrdv_verbs_qp_create(iface, qp);
    if (status != UCS_OK) {
        goto err;
    }

    qp->fd = uct_specrdv_verbs_socket();
    if (qp->fd < 0) {
        status = UCS_ERR_IO_ERROR;
        goto err;
    }

    status = uct_specrdv_verbs_watch(iface, qp->fd);
    if (status != UCS_OK) {
        close(qp->fd);
        qp->fd = -1;
        goto err;
    }

    if ((connect(qp->fd, (struct sockaddr*)&peer->addr, sizeof(peer->addr)) !=
         0) && (errno != EINPROGRESS)) {
        ucs_error("specrdv: connect to %s failed: %m", peer->super.name);
        status = UCS_ERR_UNREACHABLE;
        goto err;
    }

    qp->rx_length = 0;
    uct_specrdv_verbs_qp_set_state(iface, qp, UCT_SPECRDV_VERBS_QP_CONNECTING);
    return UCS_INPROGRESS;

err:
    uct_specrdv_verbs_qp_close(iface, qp);
    uct_specrdv_peer_fail(&iface->super.conns, &peer->super, status);
    return status;
}

/* Messages may be sent before the connection is made: they wait */
ucs_status_t uct_specrdv_verbs_conn_start(uct_specrdv_conns_t *conns,
                                          uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_conn_connect(uct_specrdv_verbs_conns_iface(conns),
                                   uct_specrdv_verbs_peer(generic));
    return UCS_OK;
}

/* Its death closes the TCP connection */
int uct_specrdv_verbs_conn_alive(uct_specrdv_conns_t *conns,
                                 uct_specrdv_peer_t *generic)
{
    uct_specrdv_verbs_peer_t *peer = uct_specrdv_verbs_peer(generic);
    char byte;
    int which;

    if (peer->remote_closed) {
        return 0;
    }

    /* a look at the sockets, without reading them: progress does that */
    for (which = 0; which < 2; ++which) {
        if ((peer->qps[which].state == UCT_SPECRDV_VERBS_QP_READY) &&
            (peer->qps[which].fd >= 0) &&
            (recv(peer->qps[which].fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) ==
             0)) {
            return 0;
        }
    }
    return 1;
}

/* The peer's connection ended: a peer that said DISCONNECT left, any other
 * died or lost us */
static void uct_specrdv_verbs_peer_eof(uct_specrdv_verbs_iface_t *iface,
                                       uct_specrdv_verbs_peer_t *peer,
                                       uct_specrdv_verbs_qp_t *qp)
{
    uct_specrdv_conns_t *conns = &iface->super.conns;

    uct_specrdv_verbs_close(&qp->fd);

    /* its DISCONNECT may still wait in the receive queue */
    while (!peer->remote_closed && (conns->ops->poll_fallback(conns) > 0)) {
    }

    if (peer->remote_closed) {
        /* nothing more comes from it, and nothing here sends to it */
        peer->reap = ucs_list_is_empty(&peer->super.eps) &&
                     (peer->qps[0].fd < 0) && (peer->qps[1].fd < 0);
        return;
    }

    if (peer->super.flags & UCT_SPECRDV_PEER_FAILED) {
        return;
    }

    uct_specrdv_verbs_peer_purge_comps(peer, UCS_ERR_CONNECTION_RESET);
    uct_specrdv_conns_peer_gone(conns, &peer->super);
}

static void uct_specrdv_verbs_wireup_fail(uct_specrdv_verbs_iface_t *iface,
                                          uct_specrdv_verbs_peer_t *peer,
                                          uct_specrdv_verbs_qp_t *qp)
{
    uct_specrdv_verbs_qp_close(iface, qp);
    if (peer->tx_qp == NULL) {
        uct_specrdv_peer_fail(&iface->super.conns, &peer->super,
                              UCS_ERR_UNREACHABLE);
    }
}

static void uct_specrdv_verbs_wireup_out(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer)
{
    uct_specrdv_verbs_qp_t *qp = &peer->qps[UCT_SPECRDV_VERBS_QP_OUT];
    socklen_t len              = sizeof(int);
    ucs_status_t status;
    int error;

    switch (qp->state) {
    case UCT_SPECRDV_VERBS_QP_CONNECTING:
        if ((getsockopt(qp->fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) ||
            (error != 0)) {
            ucs_error("specrdv: connect to %s failed: %s", peer->super.name,
                      strerror(error));
            goto err;
        }
        if (uct_specrdv_verbs_wireup_send(iface, peer, qp,
                                          UCT_SPECRDV_VERBS_WIREUP_REQ) !=
            UCS_OK) {
            goto err;
        }
        uct_specrdv_verbs_qp_set_state(iface, qp,
                                       UCT_SPECRDV_VERBS_QP_REQUESTED);
        return;
    case UCT_SPECRDV_VERBS_QP_REQUESTED:
        status = uct_specrdv_verbs_wireup_recv(qp);
        if (status == UCS_INPROGRESS) {
            return;
        }
        if ((status != UCS_OK) ||
            !uct_specrdv_verbs_wireup_valid(iface, &qp->rx_msg,
                                            UCT_SPECRDV_VERBS_WIREUP_REP)) {
            ucs_error("specrdv: %s refused the connection", peer->super.name);
            goto err;
        }
        uct_specrdv_verbs_peer_learn(iface, peer, &qp->rx_msg);
        if ((uct_specrdv_verbs_qp_connect(iface, qp, &qp->rx_msg) != UCS_OK) ||
            (uct_specrdv_verbs_wireup_send(iface, peer, qp,
                                           UCT_SPECRDV_VERBS_WIREUP_RTU) !=
             UCS_OK)) {
            goto err;
        }
        uct_specrdv_verbs_qp_ready(iface, peer, qp);
        return;
    default:
        ucs_fatal("specrdv: QP of %s in wireup state %d", peer->super.name,
                  qp->state);
    }

err:
    uct_specrdv_verbs_wireup_fail(iface, peer, qp);
}

static void uct_specrdv_verbs_wireup_in(uct_specrdv_verbs_iface_t *iface,
                                        uct_specrdv_verbs_peer_t *peer)
{
    uct_specrdv_verbs_qp_t *qp = &peer->qps[UCT_SPECRDV_VERBS_QP_IN];
    ucs_status_t status;

    status = uct_specrdv_verbs_wireup_recv(qp);
    if (status == UCS_INPROGRESS) {
        return;
    }

    if ((status == UCS_OK) &&
        uct_specrdv_verbs_wireup_valid(iface, &qp->rx_msg,
                                       UCT_SPECRDV_VERBS_WIREUP_RTU)) {
        uct_specrdv_verbs_qp_ready(iface, peer, qp);
        return;
    }

    /* An initiator that closed its interface before the connection was made
     * has nothing for us; one we have endpoints to is unreachable */
    uct_specrdv_verbs_qp_close(iface, qp);
    if ((peer->tx_qp != NULL) ||
        (peer->qps[UCT_SPECRDV_VERBS_QP_OUT].state !=
         UCT_SPECRDV_VERBS_QP_NONE)) {
        return;
    }

    if (ucs_list_is_empty(&peer->super.eps)) {
        ucs_debug("specrdv: %s left before its connection was made",
                  peer->super.name);
        /* an endpoint made before the reaping keeps it: then its next
         * message starts a connection of ours */
        peer->reap         = 1;
        peer->super.flags &= ~UCT_SPECRDV_PEER_CONNECTED;
    } else {
        uct_specrdv_peer_fail(&iface->super.conns, &peer->super,
                              UCS_ERR_UNREACHABLE);
    }
}

/* A whole request arrived on an accepted socket: answer it with our QP */
static void uct_specrdv_verbs_wireup_accept(uct_specrdv_verbs_iface_t *iface,
                                            uct_specrdv_verbs_accepting_t *acc)
{
    const uct_specrdv_verbs_wireup_msg_t *req = &acc->qp.rx_msg;
    struct sockaddr_in addr = {
        .sin_family      = AF_INET,
        .sin_addr.s_addr = req->ip,
        .sin_port        = req->port
    };
    uct_specrdv_verbs_peer_t *peer;
    uct_specrdv_verbs_qp_t *qp;

    if (!uct_specrdv_verbs_wireup_valid(iface, req,
                                        UCT_SPECRDV_VERBS_WIREUP_REQ) ||
        (uct_specrdv_verbs_conn_peer_get(iface, req->nonce, &addr, &peer) !=
         UCS_OK)) {
        uct_specrdv_verbs_qp_close(iface, &acc->qp);
        return;
    }

    qp = &peer->qps[UCT_SPECRDV_VERBS_QP_IN];
    if (qp->state != UCT_SPECRDV_VERBS_QP_NONE) {
        ucs_error("specrdv: %s connected twice", peer->super.name);
        uct_specrdv_verbs_qp_close(iface, &acc->qp);
        return;
    }

    /* the socket, its request and its place among the busy move into the
     * peer */
    *qp           = acc->qp;
    qp->rx_length = 0;
    acc->qp.fd    = -1;
    acc->qp.state = UCT_SPECRDV_VERBS_QP_NONE;
    uct_specrdv_verbs_peer_learn(iface, peer, &qp->rx_msg);
    if ((uct_specrdv_verbs_qp_create(iface, qp) != UCS_OK) ||
        (uct_specrdv_verbs_qp_connect(iface, qp, &qp->rx_msg) != UCS_OK) ||
        (uct_specrdv_verbs_wireup_send(iface, peer, qp,
                                       UCT_SPECRDV_VERBS_WIREUP_REP) !=
         UCS_OK)) {
        uct_specrdv_verbs_wireup_fail(iface, peer, qp);
        return;
    }

    uct_specrdv_verbs_qp_set_state(iface, qp, UCT_SPECRDV_VERBS_QP_REPLIED);
}

static void uct_specrdv_verbs_wireup_listen_ready(uct_specrdv_verbs_iface_t *iface)
{
    uct_specrdv_verbs_accepting_t *acc;
    unsigned count = ucs_list_length(&iface->accepting);
    int fd;

    while (count++ < UCT_SPECRDV_VERBS_MAX_ACCEPTING) {
        fd = accept4(iface->listen_fd, NULL, NULL,
                     SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if ((errno != EAGAIN) && (errno != EINTR)) {
                ucs_warn("specrdv: accept() failed: %m");
            }
            return;
        }

        acc = ucs_calloc(1, sizeof(*acc), "specrdv_verbs_accepting");
        if (acc == NULL) {
            close(fd);
            return;
        }

        if (uct_specrdv_verbs_watch(iface, fd) != UCS_OK) {
            close(fd);
            ucs_free(acc);
            return;
        }

        acc->qp.fd = fd;
        uct_specrdv_verbs_qp_set_state(iface, &acc->qp,
                                       UCT_SPECRDV_VERBS_QP_REQUESTED);
        ucs_list_add_tail(&iface->accepting, &acc->list);
    }
}

static void uct_specrdv_verbs_wireup_accepting(uct_specrdv_verbs_iface_t *iface,
                                               uct_specrdv_verbs_accepting_t *acc)
{
    ucs_status_t status = uct_specrdv_verbs_wireup_recv(&acc->qp);

    if (status == UCS_INPROGRESS) {
        return;
    }

    if (status == UCS_OK) {
        uct_specrdv_verbs_wireup_accept(iface, acc);
    } else {
        uct_specrdv_verbs_qp_close(iface, &acc->qp);
    }
    ucs_list_del(&acc->list);
    ucs_free(acc);
}

/* Something arrived on a connected QP's socket: only its end is expected */
static void uct_specrdv_verbs_wireup_ready(uct_specrdv_verbs_iface_t *iface,
                                           uct_specrdv_verbs_peer_t *peer,
                                           uct_specrdv_verbs_qp_t *qp)
{
    char byte;
    ssize_t ret;

    ret = recv(qp->fd, &byte, sizeof(byte), MSG_DONTWAIT);
    if ((ret < 0) && ((errno == EAGAIN) || (errno == EINTR))) {
        return;
    }

    if (ret > 0) {
        ucs_error("specrdv: %s wrote to a connected wireup socket",
                  peer->super.name);
    }
    uct_specrdv_verbs_peer_eof(iface, peer, qp);
}

static void uct_specrdv_verbs_wireup_peer(uct_specrdv_verbs_iface_t *iface,
                                          uct_specrdv_verbs_peer_t *peer,
                                          int which)
{
    uct_specrdv_verbs_qp_t *qp = &peer->qps[which];

    if (qp->state == UCT_SPECRDV_VERBS_QP_READY) {
        uct_specrdv_verbs_wireup_ready(iface, peer, qp);
    } else if (which == UCT_SPECRDV_VERBS_QP_OUT) {
        uct_specrdv_verbs_wireup_out(iface, peer);
    } else {
        uct_specrdv_verbs_wireup_in(iface, peer);
    }
}

/* Send DISCONNECT and wait a while for it to leave: it tells the peer that
 * our end of the TCP connection closes because we are done, not dead */
static void uct_specrdv_verbs_peer_disconnect(uct_specrdv_verbs_iface_t *iface,
                                              uct_specrdv_verbs_peer_t *peer)
{
    ucs_time_t deadline = ucs_get_time() + ucs_time_from_msec(100);
    uct_specrdv_tx_t tx;

    if ((peer->tx_qp == NULL) || peer->remote_closed ||
        (peer->super.flags & UCT_SPECRDV_PEER_FAILED)) {
        return;
    }

    /* its room may come with a completion or with the peer's credits */
    while (uct_specrdv_peer_fb_reserve(&iface->super.conns, &peer->super,
                                       &tx) != UCS_OK) {
        if ((peer->super.flags & UCT_SPECRDV_PEER_FAILED) ||
            (ucs_get_time() >= deadline)) {
            return;
        }
        uct_specrdv_verbs_poll_send(iface);
    }

    tx.ring = 0;
    uct_specrdv_peer_tx_end(&iface->super.conns, &peer->super, &tx,
                            UCT_SPECRDV_MSG_CTRL,
                            UCT_SPECRDV_VERBS_CTRL_DISCONNECT, 0);
    if (uct_specrdv_verbs_peer_signal(iface, peer) != UCS_OK) {
        return;
    }

    while ((peer->sn_completed < peer->sn_posted) &&
           !(peer->super.flags & UCT_SPECRDV_PEER_FAILED) &&
           (ucs_get_time() < deadline)) {
        uct_specrdv_verbs_poll_send(iface);
    }
}

void uct_specrdv_verbs_conn_peer_destroy(uct_specrdv_verbs_iface_t *iface,
                                         uct_specrdv_verbs_peer_t *peer)
{
    uct_specrdv_verbs_peer_disconnect(iface, peer);
    uct_specrdv_verbs_qp_close(iface, &peer->qps[0]);
    uct_specrdv_verbs_qp_close(iface, &peer->qps[1]);
    uct_specrdv_verbs_peer_purge_comps(peer, UCS_ERR_CANCELED);
    if (peer->answer_due) {
        --iface->answers_due;
    }
    uct_specrdv_peer_cleanup(&iface->super.conns, &peer->super);
    iface->by_id[peer->local_id] = NULL;
    if (peer->mirror_mr != NULL) {
        ibv_dereg_mr(peer->mirror_mr);
    }
    ucs_free(peer->mirror);
    ucs_free(peer->unseen);
    ibv_dereg_mr(peer->fb_tx_mr);
    ucs_free(peer->fb_tx);
    ucs_free(peer->fb_sn);
    ucs_free(peer);
}

/* Destroy the peers marked to be reaped */
static void uct_specrdv_verbs_conn_reap(uct_specrdv_verbs_iface_t *iface)
{
    uct_specrdv_peer_t *generic, *tmp;
    uct_specrdv_verbs_peer_t *peer;

    ucs_list_for_each_safe(generic, tmp, &iface->super.conns.peers, list) {
        peer = uct_specrdv_verbs_peer(generic);
        if (!peer->reap) {
            continue;
        }

        /* an endpoint created to it since it was marked keeps it */
        if (!ucs_list_is_empty(&generic->eps)) {
            peer->reap = 0;
            continue;
        }

        /* its early messages will never have their turn */
        uct_specrdv_verbs_rx_drop_held(iface, peer->local_id);
        ucs_debug("specrdv: forgetting %s", generic->name);
        uct_specrdv_verbs_conn_peer_destroy(iface, peer);
    }
}

/* poll() what may move: every peer's sockets (end of file means it is gone),
 * accepted sockets and the listening socket */
void uct_specrdv_verbs_conn_progress(uct_specrdv_verbs_iface_t *iface)
{
    struct pollfd *fds                  = iface->wireup.fds;
    uct_specrdv_verbs_poll_owner_t *own = iface->wireup.owners;
    uct_specrdv_verbs_accepting_t *acc;
    uct_specrdv_verbs_peer_t *peer;
    unsigned i, count, id;
    int which;

    count = 0;
    for (id = 0; id < iface->config.max_peers; ++id) {
        peer = iface->by_id[id];
        for (which = 0; (peer != NULL) && (which < 2); ++which) {
            if (peer->qps[which].fd < 0) {
                continue;
            }
            fds[count].fd     = peer->qps[which].fd;
            fds[count].events =
                    (peer->qps[which].state ==
                     UCT_SPECRDV_VERBS_QP_CONNECTING) ? POLLOUT : POLLIN;
            own[count].obj    = peer;
            own[count++].which = which;
        }
    }
    ucs_list_for_each(acc, &iface->accepting, list) {
        fds[count].fd       = acc->qp.fd;
        fds[count].events   = POLLIN;
        own[count].obj      = acc;
        own[count++].which  = -1;
    }
    fds[count].fd       = iface->listen_fd;
    fds[count].events   = POLLIN;
    own[count].obj      = NULL;
    own[count++].which  = -1;

    if (poll(fds, count, 0) <= 0) {
        return;
    }

    /* What is handled here may close sockets listed after it, never open
     * one: peers live as long as the interface, new connections are
     * accepted last */
    for (i = 0; i < count; ++i) {
        if (fds[i].revents == 0) {
            continue;
        } else if (own[i].which >= 0) {
            peer = own[i].obj;
            if (peer->qps[own[i].which].fd == fds[i].fd) {
                uct_specrdv_verbs_wireup_peer(iface, peer, own[i].which);
            }
        } else if (own[i].obj != NULL) {
            uct_specrdv_verbs_wireup_accepting(iface, own[i].obj);
        } else {
            uct_specrdv_verbs_wireup_listen_ready(iface);
        }
    }

    uct_specrdv_verbs_conn_reap(iface);
}
