/**
 * ucx-spec: speculative rendezvous, what both sides call and nothing of
 * theirs: the control-message sender and the early progress pass.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_worker.h>
#include <ucp/proto/proto_am.inl>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <string.h>


void ucp_proto_spec_early_progress(ucp_proto_spec_worker_t *spec)
{
    /* Not from inside a callback: UCP's progress is not re-entrant, and
     * worker->inprogress, which tells, is kept only with assertions on (as
     * in Debian's build); without them there is no early pass */
    if (!spec->config.early_progress || !UCS_ENABLE_ASSERT ||
        spec->worker->inprogress) {
        return;
    }

    UCP_PROTO_SPEC_COUNT(spec, early_progress, 1);
    spec->early = 1; /* no copy is claimed from a call that posts */
    ucp_worker_progress(spec->worker);
    spec->early = 0;
}


/* A host buffer's key, for the RTR, the OFFER and the RTR-ACK that offers */
ssize_t ucp_proto_spec_rkey_pack(ucp_ep_h ep, ucp_md_map_t md_map,
                                 ucp_proto_spec_memh_t memh, void *address,
                                 size_t length, void *buffer)
{
    ucp_memory_info_t mem_info = {
        .type    = UCS_MEMORY_TYPE_HOST,
        .sys_dev = UCS_SYS_DEVICE_ID_UNKNOWN
    };

    return ucp_proto_spec_rkey_pack_memh(ep->worker->context, md_map, memh,
                                         address, length, &mem_info,
                                         ucp_ep_config(ep)->uct_rkey_pack_flags,
                                         buffer);
}


/*
 * Control messages (RTR-ACK, REVOKE, REVOKE-ACK, OFFER) go on the endpoint's
 * AM lane like UCX's own ATS and ATP, behind anything already pending there:
 * the ordering the protocol relies on.
 */
typedef struct {
    ucp_proto_spec_msg_type_t type;
    size_t                    length;
    uint8_t                   hdr[];
} ucp_proto_spec_ctl_t;

size_t ucp_proto_spec_msg_seal(void *dest, size_t length,
                               ucp_proto_spec_msg_type_t type)
{
    *(uint8_t*)UCS_PTR_BYTE_OFFSET(dest, length) = type;
    return length + 1;
}

static size_t ucp_proto_spec_ctl_pack(void *dest, void *arg)
{
    ucp_request_t *req        = arg;
    ucp_proto_spec_ctl_t *ctl = req->send.buffer;

    memcpy(dest, ctl->hdr, ctl->length);
    return ucp_proto_spec_msg_seal(dest, ctl->length, ctl->type);
}

static ucs_status_t ucp_proto_spec_ctl_progress(uct_pending_req_t *self)
{
    ucp_request_t *req        = ucs_container_of(self, ucp_request_t, send.uct);
    ucp_proto_spec_ctl_t *ctl = req->send.buffer;
    ucs_status_t status;

    status = ucp_do_am_single(self, UCP_AM_ID_SPEC, ucp_proto_spec_ctl_pack,
                              ctl->length + 1);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }

    if (status != UCS_OK) {
        ucs_diag("spec: control message %u to %s failed: %s", ctl->type,
                 ucp_ep_peer_name(req->send.ep), ucs_status_string(status));
    }

    ucs_free(ctl);
    ucp_request_put(req);
    return UCS_OK;
}

ucp_request_t *ucp_proto_spec_ctl_prepare(ucp_ep_h ep,
                                          ucp_proto_spec_msg_type_t type,
                                          const void *hdr, size_t length)
{
    ucp_proto_spec_ctl_t *ctl;
    ucp_request_t *req;

    ucs_assert(length >= sizeof(uint64_t)); /* am_short takes a header word */

    ctl = ucs_malloc(sizeof(*ctl) + length, "spec_ctl");
    if (ctl == NULL) {
        return NULL;
    }

    req = ucp_request_get(ep->worker);
    if (req == NULL) {
        ucs_free(ctl);
        return NULL;
    }

    ctl->type   = type;
    ctl->length = length;
    memcpy(ctl->hdr, hdr, length);

    req->flags             = 0;
    req->send.ep           = ep;
    req->send.buffer       = ctl;
    req->send.lane         = ucp_ep_get_am_lane(ep);
    req->send.pending_lane = UCP_NULL_LANE;
    req->send.uct.func     = ucp_proto_spec_ctl_progress;
    ucp_request_send_state_reset(req, NULL, UCP_REQUEST_SEND_PROTO_BCOPY_AM);
    return req;
}

void ucp_proto_spec_ctl_post(ucp_request_t *req)
{
    ucp_proto_spec_ctl_t *ctl = req->send.buffer;

    UCP_PROTO_SPEC_COUNT(req->send.ep->worker->spec, ctl_bytes,
                         ctl->length + 1);
    ucp_request_send(req);
}

void ucp_proto_spec_ctl_discard(ucp_request_t *req)
{
    ucs_free(req->send.buffer);
    ucp_request_put(req);
}

ucs_status_t ucp_proto_spec_ctl_send(ucp_ep_h ep,
                                     ucp_proto_spec_msg_type_t type,
                                     const void *hdr, size_t length)
{
    ucp_request_t *req = ucp_proto_spec_ctl_prepare(ep, type, hdr, length);

    if (req == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    ucp_proto_spec_ctl_post(req);
    return UCS_OK;
}


#define UCP_PROTO_SPEC_MSG_ENTRY(_type, _name, _hdr) \
    [UCP_PROTO_SPEC_MSG_##_type] = { sizeof(_hdr), \
                                     ucp_proto_spec_##_name##_handler },
static const struct {
    size_t           min_length;
    uct_am_callback_t handler;
} ucp_proto_spec_msgs[] = {
    UCP_PROTO_SPEC_MSGS(UCP_PROTO_SPEC_MSG_ENTRY)
};
#undef UCP_PROTO_SPEC_MSG_ENTRY

/* A peer of another ucx-spec version, or a damaged message: dropped with a
 * word, never read past its end */
static int ucp_proto_spec_msg_check(const void *data, size_t length,
                                    uint8_t *type_p)
{
    uint8_t type;

    if (length == 0) {
        return 0;
    }

    type = *(const uint8_t*)UCS_PTR_BYTE_OFFSET(data, length - 1);
    if ((type >= UCP_PROTO_SPEC_MSG_LAST) ||
        (length - 1 < ucp_proto_spec_msgs[type].min_length)) {
        return 0;
    }

    *type_p = type;
    return 1;
}

static ucs_status_t ucp_proto_spec_am_handler(void *arg, void *data,
                                              size_t length, unsigned flags)
{
    uint8_t type;

    if (!ucp_proto_spec_msg_check(data, length, &type)) {
        ucs_diag("spec: control message of %zu bytes, type %d, dropped",
                 length,
                 (length > 0) ? *(uint8_t*)UCS_PTR_BYTE_OFFSET(data, length - 1) :
                                -1);
        return UCS_OK;
    }

    return ucp_proto_spec_msgs[type].handler(arg, data, length - 1, flags);
}

static void ucp_proto_spec_am_dump(ucp_worker_h worker,
                                   uct_am_trace_type_t trace_type, uint8_t id,
                                   const void *data, size_t length,
                                   char *buffer, size_t max)
{
    const ucp_proto_spec_rtr_hdr_t *rtr            = data;
    const ucp_proto_spec_rtr_ack_hdr_t *ack        = data;
    const ucp_proto_spec_revoke_hdr_t *revoke      = data;
    const ucp_proto_spec_revoke_ack_hdr_t *rev_ack = data;
    const ucp_proto_spec_offer_hdr_t *offer        = data;
    uint8_t type;

    if (!ucp_proto_spec_msg_check(data, length, &type)) {
        snprintf(buffer, max, "SPEC ? len %zu", length);
        return;
    }

    switch (type) {
    case UCP_PROTO_SPEC_MSG_RTR:
        snprintf(buffer, max, "SPEC_RTR tag %" PRIx64 " pos %" PRIx64
                 " rreq_id 0x%" PRIx64 " addr 0x%" PRIx64 " len %" PRIu64,
                 rtr->tag, rtr->pos, rtr->rreq_id, rtr->address, rtr->length);
        break;
    case UCP_PROTO_SPEC_MSG_RTR_ACK:
        snprintf(buffer, max, "SPEC_RTR_ACK rreq_id 0x%" PRIx64 " tag %"
                 PRIx64 " len %" PRIu64, ack->rreq_id, ack->tag, ack->length);
        break;
    case UCP_PROTO_SPEC_MSG_REVOKE:
        snprintf(buffer, max, "SPEC_REVOKE tag %" PRIx64 " pos %" PRIx64
                 " rreq_id 0x%" PRIx64, revoke->tag, revoke->pos,
                 revoke->rreq_id);
        break;
    case UCP_PROTO_SPEC_MSG_REVOKE_ACK:
        snprintf(buffer, max, "SPEC_REVOKE_ACK rreq_id 0x%" PRIx64 " tag %"
                 PRIx64 " pos %" PRIx64, rev_ack->rreq_id, rev_ack->tag,
                 rev_ack->pos);
        break;
    case UCP_PROTO_SPEC_MSG_OFFER:
        snprintf(buffer, max, "SPEC_OFFER sreq_id 0x%" PRIx64 " rreq_id 0x%"
                 PRIx64 " addr 0x%" PRIx64 " len %" PRIu64 " claim %d:%u:0x%"
                 PRIx64, offer->sreq_id, offer->rreq_id, offer->address,
                 offer->length, offer->claim.shmid, offer->claim.slot,
                 offer->claim.word);
        break;
    }
}

/* TAG only: Open MPI asks for UCP_FEATURE_TAG alone */
UCP_DEFINE_AM(UCP_FEATURE_TAG, UCP_AM_ID_SPEC, ucp_proto_spec_am_handler,
              ucp_proto_spec_am_dump, 0);
