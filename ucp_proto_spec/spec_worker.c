/**
 * ucx-spec: speculative rendezvous, the worker's life cycle, its
 * configuration's checks and its counters.
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
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>
#include <inttypes.h>


#ifdef ENABLE_STATS
static ucs_stats_class_t ucp_proto_spec_stats_class = {
    .name          = "ucp_spec",
    .num_counters  = UCP_PROTO_SPEC_STAT_LAST,
    .class_id      = UCS_STATS_CLASS_ID_INVALID,
    .counter_names = {
#define UCP_PROTO_SPEC_STAT_NAME(_name, _words) \
        [UCP_PROTO_SPEC_STAT_##_name] = #_name,
        UCP_PROTO_SPEC_COUNTERS(UCP_PROTO_SPEC_STAT_NAME)
#undef UCP_PROTO_SPEC_STAT_NAME
    }
};
#endif

/* The report's words for each counter, in the order declared */
static const ucp_proto_spec_counter_info_t ucp_proto_spec_counter_info[] = {
#define UCP_PROTO_SPEC_COUNTER_INFO(_name, _words) \
    {_words, ucs_offsetof(ucp_proto_spec_counters_t, _name)},
    UCP_PROTO_SPEC_COUNTERS(UCP_PROTO_SPEC_COUNTER_INFO)
#undef UCP_PROTO_SPEC_COUNTER_INFO
};


/* Whether UCX_SPEC_RNDV and the context allow speculation at all; the
 * per-endpoint conditions (put lanes, no tag offload) are checked per RTR */
static int ucp_proto_spec_enabled(ucp_context_h context,
                                  const ucp_proto_spec_config_t *config,
                                  uint64_t sender_mask)
{
    if (config->rndv == UCS_NO) {
        return 0;
    }

    if (context->config.ext.proto_enable &&
        !UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)) {
        ucs_diag("spec: speculative rendezvous on this UCX needs "
                 "UCX_PROTO_ENABLE=n");
        return 0;
    }

    if ((context->config.ext.rndv_mode != UCP_RNDV_MODE_AUTO) &&
        (context->config.ext.rndv_mode != UCP_RNDV_MODE_PUT_ZCOPY)) {
        ucs_diag("spec: speculative rendezvous needs UCX_RNDV_SCHEME=auto or "
                 "put_zcopy");
        return 0;
    }

    if ((config->rndv == UCS_AUTO) && (sender_mask == 0)) {
        ucs_debug("spec: off, no tag sender mask (UCX_SPEC_SENDER_MASK)");
        return 0;
    }

    return 1;
}

void ucp_proto_spec_worker_init(ucp_worker_h worker)
{
    ucp_context_h context = worker->context;
    ucp_proto_spec_worker_t *spec;
    uint64_t sender_mask, layout_ignore;
    ucs_status_t status;

    /* ucp_proto_spec_head() reads it through the worker's opaque pointer */
    UCS_STATIC_ASSERT(ucs_offsetof(ucp_proto_spec_worker_t, head) == 0);

    worker->spec = NULL;
    if (!(context->config.features & UCP_FEATURE_TAG)) {
        return;
    }

    spec = ucs_calloc(1, sizeof(*spec), "ucp_proto_spec_worker");
    if (spec == NULL) {
        ucs_warn("spec: no memory, speculative rendezvous is off");
        return;
    }

    status = ucp_proto_spec_config_read(&spec->config,
                                        context->config.env_prefix);
    if (status != UCS_OK) {
        ucs_error("spec: invalid UCX_SPEC_* configuration, speculative "
                  "rendezvous is off");
        goto err_free;
    }

    /* auto: what the MPI library told UCP (Open MPI), else its layout as
     * read from its source (MPICH) */
    sender_mask = spec->config.sender_mask;
    if (sender_mask == UCP_PROTO_SPEC_MASK_AUTO) {
        sender_mask = context->config.tag_sender_mask;
        if ((sender_mask == 0) &&
            ucp_proto_spec_layout_detect(&sender_mask, &layout_ignore) &&
            (spec->config.ignore_mask == UCP_PROTO_SPEC_MASK_AUTO)) {
            spec->config.ignore_mask = layout_ignore;
        }
    }

    if (!ucp_proto_spec_enabled(context, &spec->config, sender_mask)) {
        goto err_release;
    }

    if ((spec->config.adapt_thresh < 0) || (spec->config.adapt_thresh > 1) ||
        (spec->config.idle_copy_delay < 0) ||
        (spec->config.env_max == 0) || (spec->config.adapt_backoff == 0) ||
        (spec->config.adapt_backoff_max < spec->config.adapt_backoff)) {
        ucs_error("spec: UCX_SPEC_ADAPT_THRESH must be in [0,1], "
                  "UCX_SPEC_ENV_MAX and UCX_SPEC_ADAPT_BACKOFF positive and "
                  "UCX_SPEC_ADAPT_BACKOFF_MAX >= UCX_SPEC_ADAPT_BACKOFF, "
                  "UCX_SPEC_IDLE_COPY_DELAY not negative; speculative "
                  "rendezvous is off");
        goto err_release;
    }

    if (spec->config.ignore_mask == UCP_PROTO_SPEC_MASK_AUTO) {
        spec->config.ignore_mask = 0;
    }

    status = UCS_STATS_NODE_ALLOC(&spec->stats, &ucp_proto_spec_stats_class,
                                  worker->stats, "");
    if (status != UCS_OK) {
        goto err_release;
    }

    spec->worker     = worker;
    spec->v2         = context->config.ext.proto_enable;
    spec->head.env_mask   = ~spec->config.ignore_mask;
    spec->next_epoch = ucs_generate_uuid((uintptr_t)worker);
    kh_init_inplace(ucp_proto_spec_tx, &spec->tx);
    kh_init_inplace(ucp_proto_spec_rx, &spec->rx);
    kh_init_inplace(ucp_proto_spec_peer, &spec->peers);
    ucs_list_head_init(&spec->tx_lru);
    ucs_list_head_init(&spec->rx_lru);
    ucs_list_head_init(&spec->v2_puts);
    kh_init_inplace(ucp_proto_spec_page, &spec->claim.peers);
    ucs_list_head_init(&spec->claim.offers);
    spec->claim.shmid = UCP_PROTO_SPEC_CLAIM_NONE;
    spec->claim.cb_id = UCS_CALLBACKQ_ID_NULL;
    spec->claim.delay = ucs_time_from_sec(spec->config.idle_copy_delay);
    worker->spec = spec;
    ucs_debug("spec: worker %p speculative rendezvous on, sender mask 0x%"
              PRIx64 " ignore mask 0x%" PRIx64, worker, sender_mask,
              spec->config.ignore_mask);
    return;

err_release:
    ucs_config_parser_release_opts(&spec->config, ucp_proto_spec_config_table);
err_free:
    ucs_free(spec);
}

void ucp_proto_spec_worker_cleanup(ucp_worker_h worker)
{
    ucp_proto_spec_worker_t *spec = worker->spec;

    if (spec == NULL) {
        return;
    }

    if (spec->config.report) {
        ucp_proto_spec_report(worker, ucp_proto_spec_counter_info,
                              ucs_static_array_size(
                                      ucp_proto_spec_counter_info),
                              &spec->cnt);
    }

    ucp_proto_spec_claim_cleanup(spec);
    ucp_proto_spec_env_cleanup(spec);
    ucp_proto_spec_v2_cleanup(spec);
    kh_destroy_inplace(ucp_proto_spec_peer, &spec->peers);
    UCS_STATS_NODE_FREE(spec->stats);
    ucs_config_parser_release_opts(&spec->config, ucp_proto_spec_config_table);
    ucs_free(spec);
    worker->spec = NULL;
}

void ucp_proto_spec_ep_cleanup(ucp_ep_h ep)
{
    ucp_proto_spec_worker_t *spec = ep->worker->spec;
    ucp_proto_spec_tx_env_t *env, *tmp;

    if (spec == NULL) {
        return;
    }

    /* A later endpoint at the same address must not find this one's RTRs */
    ucs_list_for_each_safe(env, tmp, &spec->tx_lru, lru) {
        if (env->ep == ep) {
            ucp_proto_spec_tx_env_remove(spec, env);
        }
    }

    ucp_proto_spec_recv_ep_cleanup(spec, ep);
    ucp_proto_spec_claim_ep_cleanup(spec, ep);
    ucp_proto_spec_peer_forget(spec, ep);
}

ucs_status_t ucp_proto_spec_worker_counters(ucp_worker_h worker,
                                            ucp_proto_spec_counters_t *cnt)
{
    if (worker->spec == NULL) {
        return UCS_ERR_UNSUPPORTED;
    }

    *cnt = worker->spec->cnt;
    return UCS_OK;
}
