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


/*
 * Control messages (RTR-ACK, REVOKE, REVOKE-ACK) go on the endpoint's AM lane
 * like UCX's own ATS and ATP, behind anything already pending there: the
 * ordering the protocol relies on.
 */
typedef struct {
    uint8_t am_id;
    size_t  length;
    uint8_t hdr[];
} ucp_proto_spec_ctl_t;

static size_t ucp_proto_spec_ctl_pack(void *dest, void *arg)
{
    ucp_request_t *req        = arg;
    ucp_proto_spec_ctl_t *ctl = req->send.buffer;

    memcpy(dest, ctl->hdr, ctl->length);
    return ctl->length;
}

static ucs_status_t ucp_proto_spec_ctl_progress(uct_pending_req_t *self)
{
    ucp_request_t *req        = ucs_container_of(self, ucp_request_t, send.uct);
    ucp_proto_spec_ctl_t *ctl = req->send.buffer;
    ucs_status_t status;

    status = ucp_do_am_single(self, ctl->am_id, ucp_proto_spec_ctl_pack,
                              ctl->length);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status;
    }

    if (status != UCS_OK) {
        ucs_diag("spec: control message %u to %s failed: %s", ctl->am_id,
                 ucp_ep_peer_name(req->send.ep), ucs_status_string(status));
    }

    ucs_free(ctl);
    ucp_request_put(req);
    return UCS_OK;
}

ucs_status_t ucp_proto_spec_ctl_send(ucp_ep_h ep, uint8_t am_id,
                                     const void *hdr, size_t length)
{
    ucp_proto_spec_ctl_t *ctl;
    ucp_request_t *req;

    ucs_assert(length >= sizeof(uint64_t)); /* am_short takes a header word */

    ctl = ucs_malloc(sizeof(*ctl) + length, "spec_ctl");
    if (ctl == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    req = ucp_request_get(ep->worker);
    if (req == NULL) {
        ucs_free(ctl);
        return UCS_ERR_NO_MEMORY;
    }

    UCP_PROTO_SPEC_COUNT(ep->worker->spec, ctl_bytes, length);

    ctl->am_id  = am_id;
    ctl->length = length;
    memcpy(ctl->hdr, hdr, length);

    req->flags             = 0;
    req->send.ep           = ep;
    req->send.buffer       = ctl;
    req->send.lane         = ucp_ep_get_am_lane(ep);
    req->send.pending_lane = UCP_NULL_LANE;
    req->send.uct.func     = ucp_proto_spec_ctl_progress;
    ucp_request_send_state_reset(req, NULL, UCP_REQUEST_SEND_PROTO_BCOPY_AM);
    ucp_request_send(req);
    return UCS_OK;
}
