/**
 * ucx-spec: hot-buffer zero-copy eager (Rashti & Afsahi), where UCP's eager
 * send meets the usage table of spec_hotbuf.c.
 *
 * UCP picks bcopy or zcopy by length alone.  A send from a buffer reused
 * often enough for its size class goes zero-copy below the zcopy threshold
 * instead: UCP's own zcopy path registers it through the md, whose rcache
 * keeps the registration and drops it on UCM's memory events, so nothing
 * stale is ever sent from.  The costs behind the threshold are measured on
 * the first eligible send, on the md that send uses: C(m) a memcpy, R(m) a
 * registration of fresh memory, V a table hit plus the registration of
 * cached memory that every zero-copy send repeats.  An md without a cache
 * pays its whole registration in V, so no class pays there.
 *
 * The trade is a registration against a copy, so the measured thresholds
 * apply only where zero-copy needs a memory handle (UCT_MD_FLAG_NEED_MEMH:
 * RDMA).  Elsewhere nothing is registered and the transport may copy anyway
 * (shared memory writes the user's bytes into a slot either way), so UCP's
 * own choice by size stands; UCX_SPEC_HOTBUF_REUSE, which sets n instead of
 * measuring it, applies to every md.
 *
 * UCP's v2 protocols price every zero-copy send as a registration cache hit,
 * as if every buffer were hot.  Where they go zero-copy, a buffer's first
 * use pays a whole registration (perf/results/zcopy-v2-rdma-guest-1.22.0.md:
 * up to 3.4x the copy's time over rc_verbs), so the table copies it instead
 * where its class's costs say one use does not pay R, with the eager copy
 * protocol v2's selection built for the send, after v2 selected and before
 * it starts.  Later uses keep v2's zero-copy, which UCP's own memory-handle
 * cache makes cheaper than the md's V; and where v2 copies, it stays a copy
 * (perf/results/hotbuf-v2-reused-*: turning hot buffers to zero-copy there
 * did not pay).
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_hotbuf.h"
#include "spec_int.h"

#include <ucp/core/ucp_ep.inl>
#include <ucp/core/ucp_request.inl>
#include <ucp/core/ucp_worker.h>
#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
#  include <ucp/proto/proto_common.inl>
#  include <ucp/proto/proto_select.inl>
#endif
#include <ucs/config/parser.h>
#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/time/time.h>
#include <ucm/api/ucm.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* Calibrated sizes: 2^c from 64 B to 256 KiB (beyond, UCP's zcopy already) */
#define UCP_PROTO_SPEC_HOTBUF_CLASS_MIN  6
#define UCP_PROTO_SPEC_HOTBUF_CLASS_MAX  18
#define UCP_PROTO_SPEC_HOTBUF_REPS       32
/* a copy is timed over this many bytes, so that the clock's own cost and
 * resolution vanish even at 64 B (~1 ms in all) */
#define UCP_PROTO_SPEC_HOTBUF_COPY_BYTES UCS_MBYTE
#define UCP_PROTO_SPEC_HOTBUF_LOOKUPS    4096

typedef struct {
    int          enable;      /* ucs_ternary_auto_value_t */
    unsigned     table_size;
    unsigned long reuse;
    double       fraction;
    double       min_hot;
    int          v2;
    int          print;
} ucp_proto_spec_hotbuf_config_t;

typedef struct ucp_proto_spec_hotbuf_worker {
    ucp_proto_spec_hotbuf_t        table;
    ucp_proto_spec_hotbuf_config_t config;
    ucp_md_index_t                 md_index;  /* measured on it, or NULL */
    ucp_md_map_t                   ucp_mds;   /* left to UCP's choice */
    ucs_list_link_t                v2_alts;   /* spec_v2.c's configurations */
} ucp_proto_spec_hotbuf_worker_t;

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
/* UCX's eager tag protocols (tag/eager_single.c, eager_multi.c), one
 * fragment first */
extern ucp_proto_t ucp_eager_bcopy_single_proto;
extern ucp_proto_t ucp_eager_bcopy_multi_proto;
extern ucp_proto_t ucp_eager_zcopy_single_proto;
extern ucp_proto_t ucp_eager_zcopy_multi_proto;

static const ucp_proto_t *ucp_proto_spec_hotbuf_v2_bcopy[] = {
    &ucp_eager_bcopy_single_proto, &ucp_eager_bcopy_multi_proto
};
static const ucp_proto_t *ucp_proto_spec_hotbuf_v2_zcopy[] = {
    &ucp_eager_zcopy_single_proto, &ucp_eager_zcopy_multi_proto
};
#endif

/* Asked for with "y", the user hears why it is off; with "try", UCX's
 * diagnostics do */
#define ucp_proto_spec_hotbuf_off(_hbw, _fmt, ...) \
    ucs_log(((_hbw)->config.enable == UCS_YES) ? UCS_LOG_LEVEL_WARN : \
                                                 UCS_LOG_LEVEL_DIAG, \
            "spec: " _fmt ", hot-buffer eager is off", ## __VA_ARGS__)

static ucs_config_field_t ucp_proto_spec_hotbuf_config_table[] = {
  {"HOTBUF", "try",
   "Hot-buffer zero-copy eager: an eager send from a buffer reused often\n"
   "enough for its size goes zero-copy below UCX_ZCOPY_THRESH; the threshold\n"
   "is measured on the running machine at the first eager send over an RDMA\n"
   "memory domain (Rashti & Afsahi).  On UCP's v2 protocols see\n"
   "UCX_SPEC_HOTBUF_V2.  \"try\" turns it off quietly where it\n"
   "cannot be correct (no UCM memory events) or pays at no size, \"y\" with\n"
   "a warning.",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, enable),
   UCS_CONFIG_TYPE_TERNARY},

  {"HOTBUF_TABLE", "4096",
   "Buffers whose reuse is counted, per worker (bounded; the least recently\n"
   "used goes first).",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, table_size),
   UCS_CONFIG_TYPE_UINT},

  {"HOTBUF_REUSE", "auto",
   "Uses n from which registering a buffer pays, for every size from 64 B to\n"
   "256 KiB and on every memory domain; \"auto\" measures n per size on the\n"
   "first eager send over a memory domain that registers (RDMA).",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, reuse),
   UCS_CONFIG_TYPE_ULUNITS},

  {"HOTBUF_FRACTION", "0.25",
   "Register a buffer once it was sent this share of the reuse count n that\n"
   "pays for its registration, n > R / (C - V).",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, fraction),
   UCS_CONFIG_TYPE_DOUBLE},

  {"HOTBUF_MIN_HOT", "0.2",
   "Stop tracking new buffers while fewer than this share of the tracked ones\n"
   "are hot and the table's chains have grown; resume later.",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, min_hot),
   UCS_CONFIG_TYPE_DOUBLE},

  {"HOTBUF_V2", "y",
   "On UCP's v2 protocols (UCX_PROTO_ENABLE, UCX >= 1.18), a tag send that\n"
   "v2 sends zero-copy is copied instead at its buffer's first use, where the\n"
   "measured copy costs less than a registration (C < R); later uses stay\n"
   "zero-copy, and v2's copies stay copies.  Only where UCX_SPEC_HOTBUF is on.",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, v2), UCS_CONFIG_TYPE_BOOL},

  {"HOTBUF_PRINT", "n",
   "Print the measured costs and thresholds per size when they are measured,\n"
   "and the table's counters when the worker is destroyed.",
   ucs_offsetof(ucp_proto_spec_hotbuf_config_t, print), UCS_CONFIG_TYPE_BOOL},

  {NULL}
};

static const ucp_proto_spec_counter_info_t
ucp_proto_spec_hotbuf_counter_info[] = {
#define UCP_PROTO_SPEC_HOTBUF_COUNTER_INFO(_name, _words) \
    {_words, ucs_offsetof(ucp_proto_spec_hotbuf_counters_t, _name)},
    UCP_PROTO_SPEC_HOTBUF_COUNTERS(UCP_PROTO_SPEC_HOTBUF_COUNTER_INFO)
#undef UCP_PROTO_SPEC_HOTBUF_COUNTER_INFO
};

UCS_CONFIG_REGISTER_TABLE(ucp_proto_spec_hotbuf_config_table,
                          "UCP hot-buffer zero-copy eager", "SPEC_",
                          ucp_proto_spec_hotbuf_config_t,
                          &ucs_config_global_list)


static void ucp_proto_spec_hotbuf_vm_unmapped(ucm_event_type_t event_type,
                                              ucm_event_t *event, void *arg)
{
}

/* The md's registration cache forgets memory when UCM reports it unmapped;
 * without working hooks a cached registration would outlive its pages */
static ucs_status_t ucp_proto_spec_hotbuf_check_ucm(void)
{
    ucs_status_t status;

    status = ucm_set_event_handler(UCM_EVENT_VM_UNMAPPED, 0,
                                   ucp_proto_spec_hotbuf_vm_unmapped, NULL);
    if (status != UCS_OK) {
        return status;
    }

    status = ucm_test_events(UCM_EVENT_VM_UNMAPPED);
    ucm_unset_event_handler(UCM_EVENT_VM_UNMAPPED,
                            ucp_proto_spec_hotbuf_vm_unmapped, NULL);
    return status;
}

void ucp_proto_spec_hotbuf_worker_init(ucp_worker_h worker)
{
    ucp_proto_spec_hotbuf_worker_t *hbw;
    ucs_status_t status;

    worker->spec_hotbuf = NULL;
    if (!(worker->context->config.features & UCP_FEATURE_TAG)) {
        return;
    }

    hbw = ucs_calloc(1, sizeof(*hbw), "ucp_proto_spec_hotbuf_worker");
    if (hbw == NULL) {
        ucs_warn("spec: no memory, hot-buffer eager is off");
        return;
    }
    ucs_list_head_init(&hbw->v2_alts);

    status = ucp_proto_spec_config_fill(&hbw->config,
                                        ucp_proto_spec_hotbuf_config_table,
                                        worker->context->config.env_prefix,
                                        "SPEC_");
    if (status != UCS_OK) {
        ucs_error("spec: invalid UCX_SPEC_HOTBUF* configuration, hot-buffer "
                  "eager is off");
        ucs_free(hbw);
        return;
    }

    if (hbw->config.enable == UCS_NO) {
        goto err_release;
    }

    status = ucp_proto_spec_hotbuf_check_ucm();
    if (status != UCS_OK) {
        ucp_proto_spec_hotbuf_off(hbw, "UCM memory events unavailable (%s), "
                                  "so registrations cannot be cached safely",
                                  ucs_status_string(status));
        goto err_release;
    }

    status = ucp_proto_spec_hotbuf_init(&hbw->table, hbw->config.table_size,
                                        hbw->config.fraction,
                                        hbw->config.min_hot);
    if (status != UCS_OK) {
        ucs_error("spec: UCX_SPEC_HOTBUF_TABLE must be 1..16M, "
                  "UCX_SPEC_HOTBUF_FRACTION in (0,1] and "
                  "UCX_SPEC_HOTBUF_MIN_HOT in [0,1]; hot-buffer eager is off");
        goto err_release;
    }

    hbw->md_index = UCP_NULL_RESOURCE;
    hbw->ucp_mds  = 0;
    if (hbw->config.reuse != UCS_ULUNITS_AUTO) {
        ucp_proto_spec_hotbuf_set_reuse(&hbw->table,
                                        UCP_PROTO_SPEC_HOTBUF_CLASS_MIN,
                                        UCP_PROTO_SPEC_HOTBUF_CLASS_MAX,
                                        ucs_min(hbw->config.reuse, UINT32_MAX));
        if (hbw->config.print) {
            ucp_proto_spec_hotbuf_print(&hbw->table, stderr);
        }
    }

    worker->spec_hotbuf = hbw;
    return;

err_release:
    ucs_config_parser_release_opts(&hbw->config,
                                   ucp_proto_spec_hotbuf_config_table);
    ucs_free(hbw);
}

void ucp_proto_spec_hotbuf_worker_cleanup(ucp_worker_h worker)
{
    ucp_proto_spec_hotbuf_worker_t *hbw = worker->spec_hotbuf;

    if (hbw == NULL) {
        return;
    }

    if (hbw->config.print) {
        ucp_proto_spec_report(worker, ucp_proto_spec_hotbuf_counter_info,
                              ucs_static_array_size(
                                      ucp_proto_spec_hotbuf_counter_info),
                              &hbw->table.cnt);
    }

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
    ucp_proto_spec_v2_alt_cleanup(&hbw->v2_alts);
#endif
    ucp_proto_spec_hotbuf_cleanup(&hbw->table);
    ucs_config_parser_release_opts(&hbw->config,
                                   ucp_proto_spec_hotbuf_config_table);
    ucs_free(hbw);
    worker->spec_hotbuf = NULL;
}

/* Seconds for one registration and deregistration of [buffer, +length) */
static ucs_status_t ucp_proto_spec_hotbuf_time_reg(uct_md_h md, void *buffer,
                                                   size_t length,
                                                   double *seconds)
{
    uct_mem_h memh;
    ucs_status_t status;
    double start;

    *seconds = 0;
    start    = ucs_get_accurate_time();
    status = uct_md_mem_reg(md, buffer, length, UCT_MD_MEM_ACCESS_RMA, &memh);
    if (status != UCS_OK) {
        return status;
    }

    status   = uct_md_mem_dereg(md, memh);
    *seconds = ucs_get_accurate_time() - start;
    return status;
}

/* R(m): registering memory the md has not seen, the least of a few tries */
static ucs_status_t ucp_proto_spec_hotbuf_time_fresh(uct_md_h md, size_t size,
                                                     double *seconds)
{
    ucs_status_t status = UCS_OK;
    double t;
    void *buf;
    int i;

    *seconds = 1;
    for (i = 0; (status == UCS_OK) && (i < 3); ++i) {
        buf = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (buf == MAP_FAILED) {
            return UCS_ERR_NO_MEMORY;
        }

        memset(buf, 1, size);
        status   = ucp_proto_spec_hotbuf_time_reg(md, buf, size, &t);
        *seconds = ucs_min(*seconds, t);
        munmap(buf, size);
    }

    return status;
}

static ucs_status_t
ucp_proto_spec_hotbuf_calibrate(ucp_proto_spec_hotbuf_worker_t *hbw, uct_md_h md,
                                const ucp_proto_spec_md_attr_t *md_attr,
                                const char *md_name)
{
    size_t max = UCS_BIT(UCP_PROTO_SPEC_HOTBUF_CLASS_MAX);
    double reg[UCP_PROTO_SPEC_HOTBUF_CLASSES]  = {0};
    double copy[UCP_PROTO_SPEC_HOTBUF_CLASSES] = {0};
    double begin = ucs_get_accurate_time();
    ucp_proto_spec_hotbuf_t scratch;
    double start, t, lookup, cached, elapsed_ms;
    ucs_status_t status;
    unsigned c, i, reps;
    uint8_t *buf;
    size_t size;

    buf = mmap(NULL, 2 * max, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED) {
        return UCS_ERR_NO_MEMORY;
    }
    memset(buf, 1, 2 * max);

    /* V: a hit in a table, then the registration of memory the md has seen */
    status = ucp_proto_spec_hotbuf_init(&scratch, 64, 1, 0);
    if (status != UCS_OK) {
        goto out;
    }
    for (c = 0; c < UCP_PROTO_SPEC_HOTBUF_CLASSES; ++c) {
        reg[c] = copy[c] = 1;
    }
    ucp_proto_spec_hotbuf_set_costs(&scratch, reg, copy, 0);
    ucp_proto_spec_hotbuf_use(&scratch, buf, 4096);
    start = ucs_get_accurate_time();
    for (i = 0; i < UCP_PROTO_SPEC_HOTBUF_LOOKUPS; ++i) {
        ucp_proto_spec_hotbuf_use(&scratch, buf, 4096);
    }
    lookup = (ucs_get_accurate_time() - start) / UCP_PROTO_SPEC_HOTBUF_LOOKUPS;
    ucp_proto_spec_hotbuf_cleanup(&scratch);

    cached = 0;
    if (UCP_PROTO_SPEC_MD_FLAGS(md_attr) & UCT_MD_FLAG_NEED_MEMH) {
        status = ucp_proto_spec_hotbuf_time_reg(md, buf, 4096, &t); /* warm */
        for (i = 0; (status == UCS_OK) && (i < UCP_PROTO_SPEC_HOTBUF_REPS);
             ++i) {
            status  = ucp_proto_spec_hotbuf_time_reg(md, buf, 4096, &t);
            cached += t / UCP_PROTO_SPEC_HOTBUF_REPS;
        }
        if (status != UCS_OK) {
            goto out;
        }
    }

    memset(reg, 0, sizeof(reg));
    memset(copy, 0, sizeof(copy));
    for (c = UCP_PROTO_SPEC_HOTBUF_CLASS_MIN;
         c <= UCP_PROTO_SPEC_HOTBUF_CLASS_MAX; ++c) {
        size  = UCS_BIT(c);
        reps  = ucs_max(UCP_PROTO_SPEC_HOTBUF_REPS,
                        UCP_PROTO_SPEC_HOTBUF_COPY_BYTES / size);
        start = ucs_get_accurate_time();
        for (i = 0; i < reps; ++i) {
            memcpy(buf + max, buf + (i & 1), size);
            ucs_compiler_fence();
        }
        copy[c] = (ucs_get_accurate_time() - start) / reps;
        /* fresh memory each time: munmap tells the rcache to forget it */
        reg[c] = 1e-9; /* an md with nothing to register still costs V */
        if (UCP_PROTO_SPEC_MD_FLAGS(md_attr) & UCT_MD_FLAG_NEED_MEMH) {
            status = ucp_proto_spec_hotbuf_time_fresh(md, size, &reg[c]);
            if (status != UCS_OK) {
                goto out;
            }
        }
    }

    ucp_proto_spec_hotbuf_set_costs(&hbw->table, reg, copy, lookup + cached);
    elapsed_ms = (ucs_get_accurate_time() - begin) * 1e3;
    ucs_debug("spec: hot-buffer costs on md %s measured in %.3f ms", md_name,
              elapsed_ms);
    if (hbw->config.print) {
        fprintf(stderr, "# hot-buffer eager: costs on md %s measured in "
                "%.3f ms\n", md_name, elapsed_ms);
        ucp_proto_spec_hotbuf_print(&hbw->table, stderr);
    }

    for (c = 0; c < UCP_PROTO_SPEC_HOTBUF_CLASSES; ++c) {
        if (hbw->table.classes[c].register_at != 0) {
            break;
        }
    }
    if (c == UCP_PROTO_SPEC_HOTBUF_CLASSES) {
        /* e.g. an md without a registration cache: V holds a registration */
        ucp_proto_spec_hotbuf_off(hbw, "registering on md %s pays at no size "
                                  "(a send from a registered buffer costs "
                                  "%.3f us, a copy of %zu B %.3f us)", md_name,
                                  (lookup + cached) * 1e6, max,
                                  copy[UCP_PROTO_SPEC_HOTBUF_CLASS_MAX] * 1e6);
    }
    status = UCS_OK;

out:
    munmap(buf, 2 * max);
    return status;
}

/* The first send over an md that is not yet known: measure its costs if
 * it registers and none was measured, or leave it to UCP; nonzero if the
 * table applies to it */
static int ucp_proto_spec_hotbuf_md_first(ucp_proto_spec_hotbuf_worker_t *hbw,
                                          ucp_ep_h ep, ucp_lane_index_t lane,
                                          ucp_md_index_t md_index)
{
    const ucp_proto_spec_md_attr_t *md_attr = ucp_ep_md_attr(ep, lane);
    const char *md_name = ep->worker->context->tl_mds[md_index].rsc.md_name;
    ucs_status_t status;

    if (hbw->config.reuse != UCS_ULUNITS_AUTO) {
        return 1;
    }

    /* thresholds hold for one md only */
    if (!(UCP_PROTO_SPEC_MD_FLAGS(md_attr) & UCT_MD_FLAG_NEED_MEMH) ||
        (hbw->md_index != UCP_NULL_RESOURCE)) {
        hbw->ucp_mds |= UCS_BIT(md_index);
        return 0;
    }

    /* measured once: after a failure no class has costs, so every size stays
     * bcopy without a lookup */
    hbw->md_index = md_index;
    status        = ucp_proto_spec_hotbuf_calibrate(hbw, ucp_ep_md(ep, lane),
                                                    md_attr, md_name);
    if (status != UCS_OK) {
        ucp_proto_spec_hotbuf_off(hbw, "measuring registration costs on md "
                                  "%s failed (%s)", md_name,
                                  ucs_status_string(status));
    }
    return 1;
}

/* Whether the table decides for sends over @a lane of @a ep */
static int ucp_proto_spec_hotbuf_md_applies(ucp_proto_spec_hotbuf_worker_t *hbw,
                                            ucp_ep_h ep, ucp_lane_index_t lane)
{
    ucp_md_index_t md_index = ucp_ep_md_index(ep, lane);

    return !(hbw->ucp_mds & UCS_BIT(md_index)) &&
           (ucs_likely(hbw->md_index == md_index) ||
            ucp_proto_spec_hotbuf_md_first(hbw, ep, lane, md_index));
}

size_t ucp_proto_spec_hotbuf_zcopy_thresh(ucp_request_t *req,
                                          const ucp_ep_msg_config_t *msg_config,
                                          size_t zcopy_thresh)
{
    ucp_proto_spec_hotbuf_worker_t *hbw = req->send.ep->worker->spec_hotbuf;
    size_t length                       = req->send.length;

    if (ucs_likely(hbw == NULL) || (length >= zcopy_thresh) ||
        (msg_config->max_zcopy == 0) ||
        !UCP_DT_IS_CONTIG(req->send.datatype) ||
        !UCP_MEM_IS_HOST(req->send.mem_type) ||
        !ucp_proto_spec_hotbuf_md_applies(hbw, req->send.ep, req->send.lane)) {
        return zcopy_thresh;
    }

    return ucp_proto_spec_hotbuf_use(&hbw->table, req->send.buffer, length) ?
           length : zcopy_thresh;
}

#if UCP_PROTO_SPEC_UCX_AT_LEAST(1, 18)
void ucp_proto_spec_hotbuf_v2_send(ucp_request_t *req, const void *select_elem,
                                   size_t length)
{
    ucp_ep_h ep                         = req->send.ep;
    ucp_proto_spec_hotbuf_worker_t *hbw = ep->worker->spec_hotbuf;
    const ucp_proto_config_t *selected  = req->send.proto_config;
    const ucp_datatype_iter_t *dt_iter  = &req->send.state.dt_iter;
    const ucp_proto_config_t *cfg;
    ucp_proto_spec_v2_alt_t *alt;
    size_t i;

    if (ucs_likely(hbw == NULL) || !hbw->config.v2 ||
        ((selected->proto != ucp_proto_spec_hotbuf_v2_zcopy[0]) &&
         (selected->proto != ucp_proto_spec_hotbuf_v2_zcopy[1])) ||
        (ucp_proto_select_op_id(&selected->select_param) !=
         UCP_OP_ID_TAG_SEND) ||
        (dt_iter->dt_class != UCP_DATATYPE_CONTIG) ||
        !UCP_MEM_IS_HOST(dt_iter->mem_info.type) ||
        !ucp_proto_spec_hotbuf_md_applies(hbw, ep, ucp_ep_get_am_lane(ep)) ||
        !ucp_proto_spec_hotbuf_first_use(&hbw->table,
                                         dt_iter->type.contig.buffer, length)) {
        return;
    }

    for (i = 0; i < ucs_static_array_size(ucp_proto_spec_hotbuf_v2_bcopy);
         ++i) {
        alt = ucp_proto_spec_v2_alt_get(&hbw->v2_alts, ep->worker, select_elem,
                                        selected,
                                        ucp_proto_spec_hotbuf_v2_bcopy[i]);
        cfg = ucp_proto_spec_v2_alt_config(alt, ep, length);
        if (cfg != NULL) {
            ucp_proto_request_set_proto(req, cfg, length);
            ++hbw->table.cnt.copied;
            return;
        }
    }
}
#endif
