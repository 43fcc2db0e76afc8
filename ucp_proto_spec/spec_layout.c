/**
 * ucx-spec: the sender bits of an MPI library that does not tell UCP which
 * bits of a tag name the sender.  Open MPI passes tag_sender_mask to
 * ucp_init; MPICH does not, so for UCX_SPEC_SENDER_MASK=auto its layout is
 * recognised from its own words: MPI_Get_library_version, which the MPI
 * standard allows before MPI_Init.  Only layouts read in MPICH's source are
 * recognised; anything else leaves speculation off, never guessed.
 *
 * MPICH 4.0 to 4.2, ch4:ucx (src/mpid/ch4/netmod/ucx/ucx_types.h,
 * ucx_impl.h; the same in 4.0.2 and 4.2.1):
 *   tag = context id (16) | source rank (R) | MPI tag (48 - R)
 *   R   = --with-ch4-ucx-rankbits (16 unless configured)
 * A receive mask always leaves out the two error bits below the MPI tag's
 * top (mpir_tags.h: MPIR_TAG_ERROR_BIT, MPIR_TAG_PROC_FAILURE_BIT of a
 * min(31, 48 - R)-bit tag), unless MPICH was configured without them.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* MPICH's MPI_MAX_LIBRARY_VERSION_STRING; larger than any other MPI's */
#define UCP_PROTO_SPEC_LAYOUT_MAX  8192


/* The value of "<key>:" on a line of @a text, up to the line's end */
static int ucp_proto_spec_layout_field(const char *text, const char *key,
                                       char *value, size_t max)
{
    const char *line, *p, *end;
    size_t key_len   = strlen(key), len;

    for (line = text; line != NULL; line = strchr(line, '\n')) {
        line += (*line == '\n');
        if (strncmp(line, key, key_len) || (line[key_len] != ':')) {
            continue;
        }

        for (p = line + key_len + 1; (*p == ' ') || (*p == '\t'); ++p) {
        }
        end = strchr(p, '\n');
        len = (end == NULL) ? strlen(p) : (size_t)(end - p);
        if (len >= max) {
            return 0;
        }

        memcpy(value, p, len);
        value[len] = '\0';
        return 1;
    }

    return 0;
}

int ucp_proto_spec_layout_parse(const char *version, uint64_t *sender_mask_p,
                                uint64_t *ignore_mask_p)
{
    char value[4096]; /* one line: MPICH's configure line is 1.5 kB */
    unsigned major, minor, rank_bits, tag_bits;
    const char *opt;

    if (!ucp_proto_spec_layout_field(version, "MPICH Version", value,
                                     sizeof(value)) ||
        (sscanf(value, "%u.%u", &major, &minor) != 2) || (major != 4) ||
        (minor > 2)) {
        return 0; /* not MPICH, or a version whose layout is not read */
    }

    if (!ucp_proto_spec_layout_field(version, "MPICH Device", value,
                                     sizeof(value)) ||
        strcmp(value, "ch4:ucx")) {
        return 0;
    }

    if (!ucp_proto_spec_layout_field(version, "MPICH configure", value,
                                     sizeof(value)) ||
        strstr(value, "--disable-tag-error-bits") ||
        strstr(value, "--enable-tag-error-bits=no")) {
        return 0;
    }

    rank_bits = 16;
    opt       = strstr(value, "--with-ch4-ucx-rankbits=");
    if ((opt != NULL) &&
        ((sscanf(opt + strlen("--with-ch4-ucx-rankbits="), "%u",
                 &rank_bits) != 1) || (rank_bits < 1) || (rank_bits > 32))) {
        return 0;
    }

    tag_bits       = ucs_min(31, 48 - rank_bits);
    *sender_mask_p = UCS_MASK(rank_bits) << (48 - rank_bits);
    *ignore_mask_p = UCS_BIT(tag_bits - 1) | UCS_BIT(tag_bits - 2);
    return 1;
}


/* read once per process: the library does not change */
static struct {
    pthread_once_t once;
    int            found;
    uint64_t       sender_mask;
    uint64_t       ignore_mask;
} ucp_proto_spec_layout = {.once = PTHREAD_ONCE_INIT};

static void ucp_proto_spec_layout_read(void)
{
    typedef int (*get_version_func_t)(char *version, int *length);
    get_version_func_t get_version;
    char *version;
    int length;

    /* no MPI in the process: a plain UCP application says what it means */
    get_version = (get_version_func_t)dlsym(RTLD_DEFAULT,
                                            "PMPI_Get_library_version");
    if (get_version == NULL) {
        return;
    }

    version = ucs_calloc(1, UCP_PROTO_SPEC_LAYOUT_MAX, "spec_layout");
    if ((version != NULL) && (get_version(version, &length) == 0)) {
        version[UCP_PROTO_SPEC_LAYOUT_MAX - 1] = '\0';
        if (ucp_proto_spec_layout_parse(version,
                                        &ucp_proto_spec_layout.sender_mask,
                                        &ucp_proto_spec_layout.ignore_mask)) {
            ucp_proto_spec_layout.found = 1;
            ucs_debug("spec: %.*s: sender mask 0x%" PRIx64 ", ignore mask 0x%"
                      PRIx64, (int)strcspn(version, "\n"), version,
                      ucp_proto_spec_layout.sender_mask,
                      ucp_proto_spec_layout.ignore_mask);
        } else {
            /* once per process */
            ucs_diag("spec: off, the tag layout of \"%.*s\" is not known; "
                     "set UCX_SPEC_SENDER_MASK and UCX_SPEC_TAG_IGNORE_MASK",
                     (int)strcspn(version, "\n"), version);
        }
    }

    ucs_free(version);
}

int ucp_proto_spec_layout_detect(uint64_t *sender_mask_p,
                                 uint64_t *ignore_mask_p)
{
    pthread_once(&ucp_proto_spec_layout.once, ucp_proto_spec_layout_read);
    if (!ucp_proto_spec_layout.found) {
        return 0;
    }

    *sender_mask_p = ucp_proto_spec_layout.sender_mask;
    *ignore_mask_p = ucp_proto_spec_layout.ignore_mask;
    return 1;
}
