/**
 * ucx-spec: two UCP clients stream tagged messages to one server; the test
 * kills one of them mid-stream and the server must still receive every
 * message of the other, in order and byte for byte (test/rdma/check:
 * uct_specrdv_verbs_peer_killed_survivor).
 *
 *   ucp_fanin server ADDRFILE MSGS   receive until client 1 sent MSGS
 *   ucp_fanin client ADDRFILE ID MSGS
 *
 * The server writes its worker address to ADDRFILE; a client waits for it.
 * Tag: client id << 32 | sequence number.  The server prints how many
 * messages it received from each client.
 *
 * See file LICENSE for terms.
 */

#include <ucp/api/ucp.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


#define SIZE    1024
#define WINDOW  16
#define CLIENTS 2

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "ucp_fanin: " __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            exit(1); \
        } \
    } while (0)


static uint8_t pattern(uint64_t tag, size_t i)
{
    return (uint8_t)((tag >> 32) * 59 + (tag & 0xffffffff) * 13 + i * 7 + 1);
}

static void wait_req(ucp_worker_h worker, void *req)
{
    ucs_status_t status;

    if (req == NULL) {
        return;
    }
    CHECK(!UCS_PTR_IS_ERR(req), "request failed: %s",
          ucs_status_string(UCS_PTR_STATUS(req)));
    do {
        ucp_worker_progress(worker);
        status = ucp_request_check_status(req);
    } while (status == UCS_INPROGRESS);
    CHECK(status == UCS_OK, "request failed: %s", ucs_status_string(status));
    ucp_request_free(req);
}

/* Receive one message of any client into @a buf */
static void recv_any(ucp_worker_h worker, void *buf, ucp_tag_recv_info_t *info)
{
    ucp_request_param_t param = {0};
    ucs_status_t status;
    void *req;

    /* UCX 1.13 leaves the information of an immediate completion unset */
    param.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    req = ucp_tag_recv_nbx(worker, buf, SIZE, 0, 0, &param);
    CHECK(!UCS_PTR_IS_ERR(req), "receive failed: %s",
          ucs_status_string(UCS_PTR_STATUS(req)));
    do {
        ucp_worker_progress(worker);
        status = ucp_tag_recv_request_test(req, info);
    } while (status == UCS_INPROGRESS);
    CHECK(status == UCS_OK, "receive failed: %s", ucs_status_string(status));
    ucp_request_free(req);
}

static void server(ucp_worker_h worker, const char *file, unsigned msgs)
{
    unsigned got[CLIENTS] = {0};
    ucp_tag_recv_info_t info;
    ucp_address_t *addr;
    size_t addr_len, i;
    uint8_t buf[SIZE];
    char tmp[4096];
    uint64_t id, seq;
    FILE *f;

    CHECK(ucp_worker_get_address(worker, &addr, &addr_len) == UCS_OK,
          "no worker address");
    snprintf(tmp, sizeof(tmp), "%s.tmp", file);
    f = fopen(tmp, "w");
    CHECK((f != NULL) && (fwrite(addr, 1, addr_len, f) == addr_len) &&
          (fclose(f) == 0) && (rename(tmp, file) == 0),
          "cannot write %s", file);
    ucp_worker_release_address(worker, addr);

    while (got[1] < msgs) {
        recv_any(worker, buf, &info);
        id  = info.sender_tag >> 32;
        seq = info.sender_tag & 0xffffffff;
        CHECK((id < CLIENTS) && (info.length == SIZE) && (seq == got[id]),
              "message %lu of client %lu (%zu bytes) out of order: %u expected",
              (unsigned long)seq, (unsigned long)id, info.length,
              (id < CLIENTS) ? got[id] : 0);
        for (i = 0; i < SIZE; ++i) {
            CHECK(buf[i] == pattern(info.sender_tag, i),
                  "message %lu of client %lu: byte %zu is wrong",
                  (unsigned long)seq, (unsigned long)id, i);
        }
        ++got[id];
    }

    printf("server: client 0 %u, client 1 %u messages received and "
           "verified\n", got[0], got[1]);
}

static void client(ucp_worker_h worker, const char *file, unsigned id,
                   unsigned msgs)
{
    ucp_request_param_t param = {0};
    ucp_ep_params_t ep_params = {0};
    uint8_t buf[WINDOW][SIZE];
    void *reqs[WINDOW] = {NULL};
    char addr[4096];
    size_t addr_len = 0, i;
    unsigned seq, w;
    uint64_t tag;
    ucp_ep_h ep;
    FILE *f;

    while ((f = fopen(file, "r")) == NULL) {
        usleep(100000);
    }
    addr_len = fread(addr, 1, sizeof(addr), f);
    fclose(f);
    CHECK(addr_len > 0, "empty address in %s", file);

    ep_params.field_mask      = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS |
                                UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
    ep_params.address         = (ucp_address_t*)addr;
    ep_params.err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    CHECK(ucp_ep_create(worker, &ep_params, &ep) == UCS_OK, "no endpoint");

    for (seq = 0; seq < msgs; ++seq) {
        w = seq % WINDOW;
        wait_req(worker, reqs[w]);
        tag = ((uint64_t)id << 32) | seq;
        for (i = 0; i < SIZE; ++i) {
            buf[w][i] = pattern(tag, i);
        }
        reqs[w] = ucp_tag_send_nbx(ep, buf[w], SIZE, tag, &param);
    }
    for (w = 0; w < WINDOW; ++w) {
        wait_req(worker, reqs[w]);
    }
    wait_req(worker, ucp_ep_flush_nbx(ep, &param));
    printf("client %u: %u messages sent\n", id, msgs);
}

int main(int argc, char **argv)
{
    ucp_params_t params               = {0};
    ucp_worker_params_t worker_params = {0};
    ucp_context_h context;
    ucp_worker_h worker;

    CHECK(((argc == 4) && !strcmp(argv[1], "server")) ||
          ((argc == 5) && !strcmp(argv[1], "client")),
          "usage: ucp_fanin server ADDRFILE MSGS | client ADDRFILE ID MSGS");

    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    CHECK(ucp_init(&params, NULL, &context) == UCS_OK, "ucp_init failed");
    worker_params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    worker_params.thread_mode = UCS_THREAD_MODE_SINGLE;
    CHECK(ucp_worker_create(context, &worker_params, &worker) == UCS_OK,
          "no worker");

    if (argv[1][0] == 's') {
        server(worker, argv[2], atoi(argv[3]));
    } else {
        client(worker, argv[2], atoi(argv[3]), atoi(argv[4]));
    }

    /* the endpoints close with the worker, as a process that exits does */
    ucp_worker_destroy(worker);
    ucp_cleanup(context);
    return 0;
}
