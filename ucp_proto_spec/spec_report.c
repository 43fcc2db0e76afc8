/**
 * ucx-spec: one line of a worker's counters on stderr, at its end: the
 * speculative rendezvous' (UCX_SPEC_REPORT) and the hot-buffer eager's
 * (UCX_SPEC_HOTBUF_PRINT) alike.  Each of them calls here; this file calls
 * neither.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucs/datastruct/string_buffer.h>
#include <ucs/sys/sys.h>
#include <inttypes.h>
#include <stdio.h>


void ucp_proto_spec_report(ucp_worker_h worker,
                           const ucp_proto_spec_counter_info_t *info,
                           size_t count, const void *cnt)
{
    UCS_STRING_BUFFER_ONSTACK(strb, 1024);
    size_t i;

    for (i = 0; i < count; ++i) {
        ucs_string_buffer_appendf(
                &strb, "%s%s %" PRIu64,
                ((i == 0) || (info[i].words[0] == ';')) ? "" : " ",
                info[i].words,
                *(const uint64_t*)UCS_PTR_BYTE_OFFSET(cnt, info[i].offset));
    }

    /* asked for explicitly, so printed whatever UCX_LOG_LEVEL says */
    fprintf(stderr, "[%s] ucx-spec: worker %p %s\n", ucs_get_host_name(),
            worker, ucs_string_buffer_cstr(&strb));
}
