/**
 * ucx-spec: UCX_SPEC_* configuration of the speculative rendezvous.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucs/config/parser.h>
#include <ucs/sys/string.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>


/* A 64-bit tag mask: "0x..." or "auto" (UCS_CONFIG_TYPE_HEX is 32 bits) */
static int ucp_proto_spec_sscanf_mask(const char *buf, void *dest,
                                      const void *arg)
{
    char *end;

    if (!strcasecmp(buf, UCS_VALUE_AUTO_STR)) {
        *(uint64_t*)dest = UCP_PROTO_SPEC_MASK_AUTO;
        return 1;
    }

    if (strncasecmp(buf, "0x", 2) != 0) {
        return 0;
    }

    errno            = 0;
    *(uint64_t*)dest = strtoull(buf + 2, &end, 16);
    return (errno == 0) && (end != buf + 2) && (*end == '\0');
}

static int ucp_proto_spec_sprintf_mask(char *buf, size_t max, const void *src,
                                       const void *arg)
{
    uint64_t mask = *(const uint64_t*)src;

    if (mask == UCP_PROTO_SPEC_MASK_AUTO) {
        return snprintf(buf, max, UCS_VALUE_AUTO_STR);
    }

    return snprintf(buf, max, "0x%" PRIx64, mask);
}

static ucs_status_t ucp_proto_spec_clone_mask(const void *src, void *dest,
                                              const void *arg)
{
    *(uint64_t*)dest = *(const uint64_t*)src;
    return UCS_OK;
}

#define UCP_PROTO_SPEC_CONFIG_TYPE_MASK \
    {.read    = ucp_proto_spec_sscanf_mask, \
     .write   = ucp_proto_spec_sprintf_mask, \
     .clone   = ucp_proto_spec_clone_mask, \
     .release = ucs_config_release_nop, \
     .help    = ucs_config_help_generic, \
     UCP_PROTO_SPEC_CONFIG_PARSER_DOC \
     .arg     = "64-bit hex mask \"0x...\" or \"auto\""}


ucs_config_field_t ucp_proto_spec_config_table[] = {
  {"RNDV", "auto",
   "Receiver-initiated speculative rendezvous: a tag receive posted before its\n"
   "send tells the sender where the data goes (RTR), and the sender writes it\n"
   "with RDMA put while the receiver computes.\n"
   " y    - on; the application promises that a fully specified tag names one\n"
   "        sending endpoint (MPI libraries encode the source rank in the tag).\n"
   " n    - off: the stock protocol, nothing added to any message.\n"
   " auto - on when the sender bits of the tag are known: from the context's\n"
   "        tag_sender_mask (Open MPI sets it), MPICH's layout (recognised\n"
   "        from MPI_Get_library_version: 4.0-4.2, ch4:ucx) or\n"
   "        UCX_SPEC_SENDER_MASK.\n"
   "Needs no tag offload, and UCP's v2 protocols (UCX >= 1.18) or its v1 ones\n"
   "(UCX_PROTO_ENABLE=n) with put-zcopy on the rendezvous lanes; otherwise it\n"
   "stays off.",
   ucs_offsetof(ucp_proto_spec_config_t, rndv), UCS_CONFIG_TYPE_TERNARY_AUTO},

  {"THRESH", "auto",
   "Receive length from which a receive is predicted to be rendezvous and sends\n"
   "an RTR. \"auto\" uses the rendezvous threshold of the endpoint to the sender\n"
   "(on UCP v2: the lengths for which v2 selects its tag rendezvous for a send\n"
   "from host memory, with fast completion and without).",
   ucs_offsetof(ucp_proto_spec_config_t, thresh), UCS_CONFIG_TYPE_MEMUNITS},

  {"SENDER_MASK", "auto",
   "Tag bits that carry the sender's identity, for UCX_SPEC_RNDV=auto.\n"
   "\"auto\" takes ucp_params_t::tag_sender_mask; MPICH does not set that\n"
   "field, so for MPICH 4.0-4.2 ch4/ucx the bits its source puts the rank in\n"
   "(0x0000ffff00000000 as Debian builds it); another library that leaves it\n"
   "unset keeps speculation off, with one diagnostic line.",
   ucs_offsetof(ucp_proto_spec_config_t, sender_mask),
   UCP_PROTO_SPEC_CONFIG_TYPE_MASK},

  {"TAG_IGNORE_MASK", "auto",
   "Tag bits that a fully specified receive may leave out of its mask and that\n"
   "do not distinguish envelopes. \"auto\": the two error bits MPICH clears in\n"
   "every receive mask where its layout was recognised (0x60000000), else none.",
   ucs_offsetof(ucp_proto_spec_config_t, ignore_mask),
   UCP_PROTO_SPEC_CONFIG_TYPE_MASK},

  {"EARLY_PROGRESS", "y",
   "One progress pass when a receive or send predicted to be rendezvous is\n"
   "posted, so that an RTS or RTR that already arrived is found at once. Never\n"
   "from inside a callback; only in builds with assertions (Debian's), where\n"
   "UCP keeps the state that tells. An RTS it finds is held as one that came\n"
   "before its receive: a worker's first such message grows UCP's pool for\n"
   "them once (about 1 ms), where stock UCX may never hold one.",
   ucs_offsetof(ucp_proto_spec_config_t, early_progress), UCS_CONFIG_TYPE_BOOL},

  {"SHM_BALANCE", "y",
   "On shared memory, where the sender's CPU copies a taken RTR's data, decline\n"
   "a peer's RTRs while it stops ours or just after fetching one of its\n"
   "messages, so that each process copies what it receives (n: take every\n"
   "usable RTR, as over RDMA).",
   ucs_offsetof(ucp_proto_spec_config_t, shm_balance), UCS_CONFIG_TYPE_BOOL},

  {"IDLE_COPY", "y",
   "On shared memory, a rendezvous whose two buffers are known (a send that\n"
   "takes an RTR, a receive that matches an RTS when posted) is not copied in\n"
   "the call that finds it: it is offered to both processes, and the first to\n"
   "enter UCP again with it pending (wait, test, progress) copies it, the sender\n"
   "by put, the receiver by get. n: the finding call copies, as before.\n"
   "On UCP's v1 protocols it needs put and get zero-copy on the rendezvous\n"
   "lanes; on v2 every lane of the endpoint on shared memory (v2 selects the\n"
   "copy's protocol itself).",
   ucs_offsetof(ucp_proto_spec_config_t, idle_copy), UCS_CONFIG_TYPE_BOOL},

  {"IDLE_COPY_DELAY", "2us",
   "How long an offered copy waits before the sender claims it (put), counted\n"
   "from the offer or from the end of the copies this process claimed before\n"
   "(estimated from the lane's bandwidth), whichever is later: a receiver in\n"
   "UCP claims its own at once, so when both sides wait each gets its own data\n"
   "in parallel. The receiver never waits to claim (get).",
   ucs_offsetof(ucp_proto_spec_config_t, idle_copy_delay), UCS_CONFIG_TYPE_TIME},

  {"ADAPT_THRESH", "0.8",
   "Adaptation: a sender stops speculation for an envelope (stop-RTR on its\n"
   "next RTS) when fewer than this fraction of the RTRs it received were used.\n"
   "0 disables adaptation.",
   ucs_offsetof(ucp_proto_spec_config_t, adapt_thresh), UCS_CONFIG_TYPE_DOUBLE},

  {"ADAPT_MIN_SAMPLE", "16",
   "RTRs an envelope must receive before its usage factor is judged.",
   ucs_offsetof(ucp_proto_spec_config_t, adapt_min_sample), UCS_CONFIG_TYPE_UINT},

  {"ADAPT_BACKOFF", "64",
   "Rendezvous sends of a stopped envelope before the sender re-probes with\n"
   "resume-RTR; doubled after each stop, up to UCX_SPEC_ADAPT_BACKOFF_MAX.",
   ucs_offsetof(ucp_proto_spec_config_t, adapt_backoff), UCS_CONFIG_TYPE_UINT},

  {"ADAPT_BACKOFF_MAX", "65536",
   "Largest re-probe back-off, in rendezvous sends.",
   ucs_offsetof(ucp_proto_spec_config_t, adapt_backoff_max),
   UCS_CONFIG_TYPE_UINT},

  {"ENV_MAX", "4096",
   "Envelopes remembered per worker on each side; the least recently used one\n"
   "is forgotten beyond this (a forgotten envelope only loses speculation).",
   ucs_offsetof(ucp_proto_spec_config_t, env_max), UCS_CONFIG_TYPE_UINT},

  {"RTR_QUEUE_MAX", "64",
   "RTRs a sender keeps per envelope for sends not yet posted; more are dropped.",
   ucs_offsetof(ucp_proto_spec_config_t, rtr_queue_max), UCS_CONFIG_TYPE_UINT},

  {"REPORT", "n",
   "Print the worker's speculation counters when it is destroyed.",
   ucs_offsetof(ucp_proto_spec_config_t, report), UCS_CONFIG_TYPE_BOOL},

  {NULL}
};

UCS_CONFIG_REGISTER_TABLE(ucp_proto_spec_config_table,
                          "UCP speculative rendezvous", "SPEC_",
                          ucp_proto_spec_config_t, &ucs_config_global_list)

ucs_status_t ucp_proto_spec_config_read(ucp_proto_spec_config_t *config,
                                        const char *env_prefix)
{
    return ucp_proto_spec_config_fill(config, ucp_proto_spec_config_table,
                                      env_prefix, "SPEC_");
}
