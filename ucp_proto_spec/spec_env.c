/**
 * ucx-spec: per-envelope tables of the speculative rendezvous.
 *
 * Both sides keep a bounded table: the sender by (endpoint, tag), the
 * receiver by tag.  The least recently used entry goes when the table is
 * full.  Forgetting is always safe: a forgotten sender entry comes back with a
 * new epoch, so RTRs computed against the old numbering are dropped; a
 * forgotten receiver entry sends no RTR until an RTS teaches it again.  A
 * receiver entry with RTRs or revokes outstanding is never forgotten.
 *
 * See file LICENSE for terms.
 */

#ifdef HAVE_CONFIG_H
#  include "config.h"
#endif

#include "spec_int.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <inttypes.h>


static void ucp_proto_spec_env_bit_add(ucp_proto_spec_worker_t *spec,
                                       uint64_t *filter, unsigned *bits,
                                       ucp_tag_t tag)
{
    unsigned bit = ucp_proto_spec_env_bit(&spec->head, tag);

    ++bits[bit];
    *filter |= UCS_BIT(bit);
}

static void ucp_proto_spec_env_bit_del(ucp_proto_spec_worker_t *spec,
                                       uint64_t *filter, unsigned *bits,
                                       ucp_tag_t tag)
{
    unsigned bit = ucp_proto_spec_env_bit(&spec->head, tag);

    ucs_assert(bits[bit] > 0);
    if (--bits[bit] == 0) {
        *filter &= ~UCS_BIT(bit);
    }
}

void ucp_proto_spec_tx_env_remove(ucp_proto_spec_worker_t *spec,
                                  ucp_proto_spec_tx_env_t *env)
{
    ucp_proto_spec_tx_key_t key = {env->ep, env->tag};
    khiter_t iter;

    ucp_proto_spec_tx_env_drop_upto(spec, env, UCP_PROTO_SPEC_POS_MASK);
    iter = kh_get(ucp_proto_spec_tx, &spec->tx, key);
    ucs_assert(iter != kh_end(&spec->tx));
    kh_del(ucp_proto_spec_tx, &spec->tx, iter);
    ucs_list_del(&env->lru);
    --spec->head.tx_count;
    ucp_proto_spec_env_bit_del(spec, &spec->head.tx_filter, spec->tx_bits,
                               env->tag);
    ucs_free(env);
}

ucp_proto_spec_tx_env_t *
ucp_proto_spec_tx_env_get(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                          ucp_tag_t tag, int create)
{
    ucp_proto_spec_tx_key_t key = {ep, tag & spec->head.env_mask};
    ucp_proto_spec_tx_env_t *env;
    khiter_t iter;
    int ret;

    /* A stream sends on one envelope: every tag send comes here */
    if (!ucs_list_is_empty(&spec->tx_lru)) {
        env = ucs_list_head(&spec->tx_lru, ucp_proto_spec_tx_env_t, lru);
        if ((env->ep == ep) && (env->tag == key.tag)) {
            return env;
        }
    }

    iter = kh_get(ucp_proto_spec_tx, &spec->tx, key);
    if (iter != kh_end(&spec->tx)) {
        env = kh_val(&spec->tx, iter);
        ucs_list_del(&env->lru);
        ucs_list_add_head(&spec->tx_lru, &env->lru);
        return env;
    }

    if (!create) {
        return NULL;
    }

    if (spec->head.tx_count >= spec->config.env_max) {
        ucp_proto_spec_tx_env_remove(spec,
                                   ucs_list_tail(&spec->tx_lru,
                                                 ucp_proto_spec_tx_env_t,
                                                 lru));
    }

    env = ucs_calloc(1, sizeof(*env), "spec_tx_env");
    if (env == NULL) {
        return NULL;
    }

    iter = kh_put(ucp_proto_spec_tx, &spec->tx, key, &ret);
    if (ret < 0) {
        ucs_free(env);
        return NULL;
    }

    env->ep      = ep;
    env->tag     = key.tag;
    /* never 0: a send's position is never 0, which means "none" */
    env->epoch   = ((spec->next_epoch++ % UCS_MASK(UCP_PROTO_SPEC_EPOCH_BITS)) + 1)
                   << UCP_PROTO_SPEC_INDEX_BITS;
    env->backoff = spec->config.adapt_backoff;
    ucs_list_head_init(&env->rtrq);
    ucs_list_add_head(&spec->tx_lru, &env->lru);
    kh_val(&spec->tx, iter) = env;
    ++spec->head.tx_count;
    ucp_proto_spec_env_bit_add(spec, &spec->head.tx_filter, spec->tx_bits,
                               env->tag);
    return env;
}

void ucp_proto_spec_tx_env_drop_upto(ucp_proto_spec_worker_t *spec,
                                     ucp_proto_spec_tx_env_t *env,
                                     uint64_t pos)
{
    ucp_proto_spec_rtrq_entry_t *entry, *tmp;

    ucs_list_for_each_safe(entry, tmp, &env->rtrq, list) {
        if ((entry->pos & UCP_PROTO_SPEC_POS_MASK) > pos) {
            continue;
        }

        ucs_list_del(&entry->list);
        --env->rtrq_length;
        ucs_free(entry);
    }
}

ucp_proto_spec_rtrq_entry_t *
ucp_proto_spec_tx_env_find(ucp_proto_spec_tx_env_t *env, uint64_t pos)
{
    ucp_proto_spec_rtrq_entry_t *entry;

    ucs_list_for_each(entry, &env->rtrq, list) {
        if (entry->pos == pos) {
            return entry;
        }
    }

    return NULL;
}

static int ucp_proto_spec_rx_env_pinned(ucp_proto_spec_rx_env_t *env)
{
    return (env->rtr_count != 0) || (env->revokes != 0) ||
           !ucs_list_is_empty(&env->cancels);
}

static void ucp_proto_spec_rx_env_free(ucp_proto_spec_worker_t *spec,
                                       ucp_proto_spec_rx_env_t *env)
{
    khiter_t iter;

    ucs_assert(!ucp_proto_spec_rx_env_pinned(env));
    iter = kh_get(ucp_proto_spec_rx, &spec->rx, env->tag);
    ucs_assert(iter != kh_end(&spec->rx));
    kh_del(ucp_proto_spec_rx, &spec->rx, iter);
    ucs_list_del(&env->lru);
    --spec->head.rx_count;
    ucp_proto_spec_env_bit_del(spec, &spec->head.rx_filter, spec->rx_bits,
                               env->tag);
    ucs_free(env);
}

ucp_proto_spec_rx_env_t *
ucp_proto_spec_rx_env_get(ucp_proto_spec_worker_t *spec, ucp_tag_t tag,
                          int create)
{
    ucp_proto_spec_rx_env_t *env, *victim;
    ucs_list_link_t *link;
    khiter_t iter;
    int ret;

    tag &= spec->head.env_mask;
    /* every tag receive and every arrival comes here */
    if (!ucs_list_is_empty(&spec->rx_lru)) {
        env = ucs_list_head(&spec->rx_lru, ucp_proto_spec_rx_env_t, lru);
        if (env->tag == tag) {
            return env;
        }
    }

    iter = kh_get(ucp_proto_spec_rx, &spec->rx, tag);
    if (iter != kh_end(&spec->rx)) {
        env = kh_val(&spec->rx, iter);
        ucs_list_del(&env->lru);
        ucs_list_add_head(&spec->rx_lru, &env->lru);
        return env;
    }

    if (!create) {
        return NULL;
    }

    if (spec->head.rx_count >= spec->config.env_max) {
        /* the least recently used entry that nothing pins */
        victim = NULL;
        for (link = spec->rx_lru.prev; link != &spec->rx_lru;
             link = link->prev) {
            env = ucs_container_of(link, ucp_proto_spec_rx_env_t, lru);
            if (!ucp_proto_spec_rx_env_pinned(env)) {
                victim = env;
                break;
            }
        }

        if (victim == NULL) {
            return NULL; /* every entry is in use: learn nothing */
        }

        ucp_proto_spec_rx_env_free(spec, victim);
    }

    env = ucs_calloc(1, sizeof(*env), "spec_rx_env");
    if (env == NULL) {
        return NULL;
    }

    iter = kh_put(ucp_proto_spec_rx, &spec->rx, tag, &ret);
    if (ret < 0) {
        ucs_free(env);
        return NULL;
    }

    env->tag = tag;
    ucs_list_head_init(&env->rtrs);
    ucs_list_head_init(&env->cancels);
    ucs_list_add_head(&spec->rx_lru, &env->lru);
    kh_val(&spec->rx, iter) = env;
    ++spec->head.rx_count;
    ucp_proto_spec_env_bit_add(spec, &spec->head.rx_filter, spec->rx_bits,
                               env->tag);
    return env;
}

void ucp_proto_spec_env_cleanup(ucp_proto_spec_worker_t *spec)
{
    ucp_proto_spec_tx_env_t *tx_env, *tx_tmp;
    ucp_proto_spec_rx_env_t *rx_env, *rx_tmp;

    ucs_list_for_each_safe(tx_env, tx_tmp, &spec->tx_lru, lru) {
        ucp_proto_spec_tx_env_remove(spec, tx_env);
    }

    ucs_list_for_each_safe(rx_env, rx_tmp, &spec->rx_lru, lru) {
        if (ucp_proto_spec_rx_env_pinned(rx_env)) {
            ucs_warn("spec: envelope 0x%" PRIx64 " destroyed with %u RTRs "
                     "and %u revokes outstanding", rx_env->tag,
                     rx_env->rtr_count, rx_env->revokes);
            rx_env->rtr_count = rx_env->revokes = 0;
            ucs_list_head_init(&rx_env->rtrs);
            ucs_list_head_init(&rx_env->cancels);
        }
        ucp_proto_spec_rx_env_free(spec, rx_env);
    }

    kh_destroy_inplace(ucp_proto_spec_tx, &spec->tx);
    kh_destroy_inplace(ucp_proto_spec_rx, &spec->rx);
}

/* An exchange fetches one message of the peer's per send to it; two sends
 * leave room for one iteration out of phase before RTRs are taken again */
#define UCP_PROTO_SPEC_FETCH_DECLINES 2

static ucp_proto_spec_peer_t *
ucp_proto_spec_peer_get(ucp_proto_spec_worker_t *spec, ucp_ep_h ep, int create)
{
    khiter_t iter = kh_get(ucp_proto_spec_peer, &spec->peers, (uintptr_t)ep);
    int ret;

    if (iter != kh_end(&spec->peers)) {
        return &kh_val(&spec->peers, iter);
    }
    if (!create) {
        return NULL;
    }

    iter = kh_put(ucp_proto_spec_peer, &spec->peers, (uintptr_t)ep, &ret);
    if (ret < 0) {
        return NULL; /* no memory: the peer keeps its RTRs taken */
    }
    memset(&kh_val(&spec->peers, iter), 0, sizeof(ucp_proto_spec_peer_t));
    return &kh_val(&spec->peers, iter);
}

static void ucp_proto_spec_peer_put(ucp_proto_spec_worker_t *spec,
                                    ucp_ep_h ep, ucp_proto_spec_peer_t *peer)
{
    if (!peer->stopped && (peer->fetches == 0)) {
        ucp_proto_spec_peer_forget(spec, ep);
    }
}

void ucp_proto_spec_peer_stopped(ucp_proto_spec_worker_t *spec, ucp_ep_h ep,
                                 int stopped)
{
    ucp_proto_spec_peer_t *peer = ucp_proto_spec_peer_get(spec, ep, stopped);

    if (peer != NULL) {
        peer->stopped = !!stopped;
        ucp_proto_spec_peer_put(spec, ep, peer);
    }
}

void ucp_proto_spec_peer_fetched(ucp_proto_spec_worker_t *spec, ucp_ep_h ep)
{
    ucp_proto_spec_peer_t *peer = ucp_proto_spec_peer_get(spec, ep, 1);

    if (peer != NULL) {
        peer->fetches = UCP_PROTO_SPEC_FETCH_DECLINES;
    }
}

int ucp_proto_spec_peer_declines(ucp_proto_spec_worker_t *spec, ucp_ep_h ep)
{
    ucp_proto_spec_peer_t *peer = ucp_proto_spec_peer_get(spec, ep, 0);

    if (peer == NULL) {
        return 0;
    }
    if (peer->stopped) {
        return 1;
    }

    ucs_assert(peer->fetches > 0);
    --peer->fetches;
    ucp_proto_spec_peer_put(spec, ep, peer);
    return 1;
}

void ucp_proto_spec_peer_forget(ucp_proto_spec_worker_t *spec, ucp_ep_h ep)
{
    khiter_t iter = kh_get(ucp_proto_spec_peer, &spec->peers, (uintptr_t)ep);

    if (iter != kh_end(&spec->peers)) {
        kh_del(ucp_proto_spec_peer, &spec->peers, iter);
    }
}
