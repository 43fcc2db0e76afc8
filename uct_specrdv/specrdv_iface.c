/**
 * ucx-spec: specrdv interface, the part shared by every writer.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "specrdv_iface.h"
#include "specrdv_md.h"
#include "shm/specrdv_shm_iface.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>


static ucs_config_field_t uct_specrdv_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(uct_specrdv_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {"RING_SLOTS", "16",
     "Number of slots in each per-peer ring (one ring per direction of a\n"
     "connection). Ring memory per peer and direction is RING_SLOTS * SLOT_SIZE.",
     ucs_offsetof(uct_specrdv_iface_config_t, ring_slots),
     UCS_CONFIG_TYPE_UINT},

    {"SLOT_SIZE", "8k",
     "Size of one ring slot, including the message header and the tail flag.\n"
     "Must be a multiple of the cache line size.",
     ucs_offsetof(uct_specrdv_iface_config_t, slot_size),
     UCS_CONFIG_TYPE_MEMUNITS},

    {"POLL_SET", "8",
     "Most peers whose rings this interface polls: its RDMA polling set.\n"
     "Each costs RING_SLOTS * SLOT_SIZE of memory and one cache line read per\n"
     "progress call; peers beyond it use the fallback channel.",
     ucs_offsetof(uct_specrdv_iface_config_t, poll_set), UCS_CONFIG_TYPE_UINT},

    {"RING_AFTER", "8",
     "Messages a peer sends through the fallback channel before it asks for a\n"
     "ring in the receiver's polling set (0: at its first message).",
     ucs_offsetof(uct_specrdv_iface_config_t, ring_after),
     UCS_CONFIG_TYPE_UINT},

    {"CREDIT_UPDATE", "auto",
     "Freed ring slots after which the receiver updates the sender's credits\n"
     "explicitly instead of waiting for a message to piggyback them on.\n"
     "auto: half the ring.",
     ucs_offsetof(uct_specrdv_iface_config_t, credit_update),
     UCS_CONFIG_TYPE_ULUNITS},

    {"BW", "12179MBs",
     "Bandwidth estimate the transport reports to UCP for protocol selection.",
     ucs_offsetof(uct_specrdv_iface_config_t, bandwidth), UCS_CONFIG_TYPE_BW},

    {"", "", NULL,
     ucs_offsetof(uct_specrdv_iface_config_t, shm),
     UCS_CONFIG_TYPE_TABLE(uct_specrdv_shm_config_table)},

    {NULL}
};

static ucs_status_t
uct_specrdv_iface_check_config(const uct_specrdv_iface_config_t *config)
{
    if ((config->ring_slots < UCT_SPECRDV_RING_SLOTS_MIN) ||
        (config->ring_slots > UCT_SPECRDV_RING_SLOTS_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_RING_SLOTS=%u is out of range [%u..%u]",
                  config->ring_slots, UCT_SPECRDV_RING_SLOTS_MIN,
                  UCT_SPECRDV_RING_SLOTS_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->slot_size < UCT_SPECRDV_SLOT_SIZE_MIN) ||
        (config->slot_size > UCT_SPECRDV_SLOT_SIZE_MAX) ||
        (config->slot_size % UCS_SYS_CACHE_LINE_SIZE)) {
        ucs_error("specrdv: UCX_SPECRDV_SLOT_SIZE=%zu must be a multiple of %d "
                  "in [%d..%zu]", config->slot_size, UCS_SYS_CACHE_LINE_SIZE,
                  UCT_SPECRDV_SLOT_SIZE_MIN, (size_t)UCT_SPECRDV_SLOT_SIZE_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->poll_set == 0) || (config->poll_set > UINT16_MAX)) {
        ucs_error("specrdv: UCX_SPECRDV_POLL_SET=%u is out of range [1..%u]",
                  config->poll_set, UINT16_MAX);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->credit_update != UCS_ULUNITS_AUTO) &&
        ((config->credit_update == 0) ||
         (config->credit_update > config->ring_slots))) {
        ucs_error("specrdv: UCX_SPECRDV_CREDIT_UPDATE=%lu is out of range "
                  "[1..RING_SLOTS=%u]", config->credit_update,
                  config->ring_slots);
        return UCS_ERR_INVALID_PARAM;
    }

    return UCS_OK;
}

void uct_specrdv_iface_query(uct_specrdv_iface_t *iface,
                             uct_iface_attr_t *iface_attr)
{
    uct_base_iface_query(&iface->super, iface_attr);
}

UCS_CLASS_INIT_FUNC(uct_specrdv_iface_t, uct_iface_ops_t *ops,
                    uct_iface_internal_ops_t *internal_ops, uct_md_h md,
                    uct_worker_h worker, const uct_iface_params_t *params,
                    const uct_iface_config_t *tl_config)
{
    const uct_specrdv_iface_config_t *config =
            ucs_derived_of(tl_config, uct_specrdv_iface_config_t);
    ucs_status_t status;

    UCT_CHECK_PARAM(params->field_mask & UCT_IFACE_PARAM_FIELD_OPEN_MODE,
                    "UCT_IFACE_PARAM_FIELD_OPEN_MODE is not defined");
    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        ucs_error("specrdv: only UCT_IFACE_OPEN_MODE_DEVICE is supported");
        return UCS_ERR_UNSUPPORTED;
    }

    status = uct_specrdv_iface_check_config(config);
    if (status != UCS_OK) {
        return status;
    }

    UCS_CLASS_CALL_SUPER_INIT(
            uct_base_iface_t, ops, internal_ops, md, worker, params,
            tl_config UCS_STATS_ARG(
                    (params->field_mask & UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                            params->stats_root : NULL)
                    UCS_STATS_ARG(params->mode.device.dev_name));

    self->config.ring_slots    = config->ring_slots;
    self->config.slot_size     = config->slot_size;
    self->config.poll_set      = config->poll_set;
    self->config.ring_after    = config->ring_after;
    self->config.credit_update = (config->credit_update == UCS_ULUNITS_AUTO) ?
                                 ucs_max(config->ring_slots / 2, 1) :
                                 config->credit_update;
    self->config.bandwidth     = config->bandwidth;
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(uct_specrdv_iface_t)
{
}

UCS_CLASS_DEFINE(uct_specrdv_iface_t, uct_base_iface_t);

static ucs_status_t
uct_specrdv_query_tl_devices(uct_md_h tl_md,
                             uct_tl_device_resource_t **tl_devices_p,
                             unsigned *num_tl_devices_p)
{
    uct_specrdv_md_t *md = ucs_derived_of(tl_md, uct_specrdv_md_t);

    switch (md->type) {
    case UCT_SPECRDV_MD_TYPE_SHM:
        return uct_single_device_resource(tl_md, UCT_SPECRDV_SHM_DEVICE_NAME,
                                          UCT_DEVICE_TYPE_SHM,
                                          UCS_SYS_DEVICE_ID_UNKNOWN,
                                          tl_devices_p, num_tl_devices_p);
    }

    return UCS_ERR_NO_DEVICE;
}

/* One transport name for every device: the memory domain picks the writer */
static ucs_status_t
uct_specrdv_iface_open(uct_md_h tl_md, uct_worker_h worker,
                       const uct_iface_params_t *params,
                       const uct_iface_config_t *config, uct_iface_h *iface_p)
{
    uct_specrdv_md_t *md = ucs_derived_of(tl_md, uct_specrdv_md_t);

    switch (md->type) {
    case UCT_SPECRDV_MD_TYPE_SHM:
        return uct_specrdv_shm_iface_open(tl_md, worker, params, config,
                                          iface_p);
    }

    return UCS_ERR_NO_DEVICE;
}

uct_tl_t UCT_TL_NAME(specrdv) = {
    .name          = "specrdv",
    .query_devices = uct_specrdv_query_tl_devices,
    .iface_open    = uct_specrdv_iface_open,
    .config        = {
        .name      = "specrdv transport",
        .prefix    = "SPECRDV_",
        .table     = uct_specrdv_iface_config_table,
        .size      = sizeof(uct_specrdv_iface_config_t),
    }
};

UCT_SINGLE_TL_INIT(&uct_specrdv_component, specrdv, ctor,,)
