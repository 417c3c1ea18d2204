/* The impairing port of impair.h. */
#include "impair.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/clock.h"

#define QCAP 8192u

typedef struct qent {
    tw_pkt pkt;
    uint64_t at_ns;
} qent;

typedef struct dline {
    qent e[QCAP];
    unsigned n;
} dline;

typedef struct impair_port {
    tw_port base;
    tw_port *in;
    twi_config cfg;
    twi_stats stats;
    uint64_t rng;
    uint64_t link_free_ns; /* bottleneck: when the link finishes its queue */
    dline txq, rxq;
    tw_pkt stage[64];
} impair_port;

static double rnd(impair_port *w)
{
    /* xorshift64*: reproducible from the seed. */
    w->rng ^= w->rng >> 12;
    w->rng ^= w->rng << 25;
    w->rng ^= w->rng >> 27;
    return (double)((w->rng * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
}

static int active(const impair_port *w)
{
    const twi_config *c = &w->cfg;
    return c->loss > 0 || c->dup > 0 || c->reorder > 0 || c->corrupt > 0 || c->delay_ns ||
           c->rate_Bps;
}

/* CE-marks an ECT IPv4 packet (fixing the header checksum incrementally,
 * RFC 1624); returns 1 if marked. */
static int mark_ce(tw_pkt *k)
{
    uint8_t *b = k->data;
    if (k->len < 34 || b[12] != 0x08 || b[13] != 0x00)
        return 0;
    uint8_t tos = b[15];
    if ((tos & 3u) == 0 || (tos & 3u) == 3u)
        return 0;
    uint16_t old = (uint16_t)(b[14] << 8 | tos);
    uint16_t nw = (uint16_t)(old | 3u);
    b[15] = (uint8_t)nw;
    uint32_t sum = (uint16_t)~(uint16_t)(b[24] << 8 | b[25]);
    sum += (uint16_t)~old;
    sum += nw;
    while (sum >> 16)
        sum = (sum & 0xffffu) + (sum >> 16);
    uint16_t ck = (uint16_t)~sum;
    b[24] = (uint8_t)(ck >> 8);
    b[25] = (uint8_t)ck;
    return 1;
}

static void push(dline *q, const tw_pkt *k, uint64_t at)
{
    q->e[q->n].pkt = *k;
    q->e[q->n].at_ns = at;
    q->n++;
}

/* Runs one packet through loss/corruption/dup/delay/reorder (and, for tx,
 * the bottleneck) into q; frees what is lost. */
static void impair_one(impair_port *w, dline *q, tw_pkt *k, int is_tx, uint64_t now)
{
    const twi_config *c = &w->cfg;
    if (q->n + 2 > QCAP || rnd(w) < c->loss) {
        w->stats.lost++;
        tw_port_free_burst(w->in, k, 1);
        return;
    }
    uint64_t at = now;
    if (is_tx && c->rate_Bps) {
        uint64_t start = w->link_free_ns > now ? w->link_free_ns : now;
        uint64_t qdelay = start - now;
        if (c->drop_ns && qdelay > c->drop_ns) {
            w->stats.queue_drops++;
            tw_port_free_burst(w->in, k, 1);
            return;
        }
        if (c->mark_ns && qdelay > c->mark_ns && mark_ce(k))
            w->stats.ce_marked++;
        w->link_free_ns = start + (uint64_t)k->len * 1000000000u / c->rate_Bps;
        at = w->link_free_ns;
    }
    if (c->delay_ns) {
        if (c->reorder > 0 && rnd(w) < c->reorder) {
            w->stats.reordered++; /* netem: sent at once, ahead of the delayed */
        } else {
            int64_t j = c->jitter_ns ? (int64_t)(rnd(w) * 2.0 * (double)c->jitter_ns) -
                                           (int64_t)c->jitter_ns
                                     : 0;
            at += (uint64_t)((int64_t)c->delay_ns + j);
            w->stats.delayed++;
        }
    }
    if (c->corrupt > 0 && rnd(w) < c->corrupt && k->len > 14) {
        /* One bit flipped past the Ethernet header: IP or TCP checksums
         * must catch it. */
        uint32_t bit = (uint32_t)(rnd(w) * (double)((k->len - 14u) * 8u));
        k->data[14u + bit / 8u] ^= (uint8_t)(1u << (bit % 8u));
        w->stats.corrupted++;
    }
    if (c->dup > 0 && rnd(w) < c->dup) {
        tw_pkt d;
        if (tw_port_alloc_burst(w->in, &d, 1) == 1) {
            memcpy(d.data, k->data, k->len);
            d.len = k->len;
            d.ol_flags = k->ol_flags;
            push(q, &d, at + 1000);
            w->stats.duped++;
        }
    }
    push(q, k, at);
}

/* Moves due entries of q (in release order) to out; returns how many. */
static unsigned take_due(dline *q, tw_pkt *out, unsigned max, uint64_t now)
{
    unsigned got = 0;
    while (got < max) {
        unsigned best = QCAP;
        for (unsigned i = 0; i < q->n; i++)
            if (q->e[i].at_ns <= now && (best == QCAP || q->e[i].at_ns < q->e[best].at_ns))
                best = i;
        if (best == QCAP)
            break;
        out[got++] = q->e[best].pkt;
        /* Keep relative order of the rest: shift down. */
        memmove(&q->e[best], &q->e[best + 1], (q->n - best - 1) * sizeof(qent));
        q->n--;
    }
    return got;
}

static void flush_tx(impair_port *w, uint64_t now)
{
    tw_pkt out[64];
    for (;;) {
        unsigned n = take_due(&w->txq, out, 64, now);
        if (!n)
            return;
        unsigned s = tw_port_tx_burst(w->in, out, n);
        if (s < n) {
            /* The real port is full: put the rest back, due now. */
            for (unsigned i = s; i < n; i++)
                push(&w->txq, &out[i], now);
            return;
        }
    }
}

static unsigned w_rx_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    impair_port *w = (impair_port *)p;
    if (!active(w) && w->rxq.n == 0)
        return tw_port_rx_burst(w->in, pkts, n);
    uint64_t now = (uint64_t)tw_clock_now_ns();
    flush_tx(w, now);
    unsigned r = tw_port_rx_burst(w->in, w->stage, 64);
    for (unsigned i = 0; i < r; i++)
        impair_one(w, &w->rxq, &w->stage[i], 0, now);
    return take_due(&w->rxq, pkts, n, now);
}

static unsigned w_tx_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    impair_port *w = (impair_port *)p;
    if (!active(w) && w->txq.n == 0)
        return tw_port_tx_burst(w->in, pkts, n);
    uint64_t now = (uint64_t)tw_clock_now_ns();
    unsigned i = 0;
    for (; i < n && w->txq.n + 2 <= QCAP; i++)
        impair_one(w, &w->txq, &pkts[i], 1, now);
    flush_tx(w, now);
    return i;
}

static unsigned w_alloc_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    return tw_port_alloc_burst(((impair_port *)p)->in, pkts, n);
}

static void w_free_burst(tw_port *p, tw_pkt *pkts, unsigned n)
{
    tw_port_free_burst(((impair_port *)p)->in, pkts, n);
}

static void w_poll(tw_port *p)
{
    impair_port *w = (impair_port *)p;
    if (w->txq.n)
        flush_tx(w, (uint64_t)tw_clock_now_ns());
    tw_port_poll(w->in);
}

static int w_rx_fd(tw_port *p)
{
    tw_port *in = ((impair_port *)p)->in;
    return in->ops->rx_fd ? in->ops->rx_fd(in) : -1;
}

static void w_close(tw_port *p)
{
    impair_port *w = (impair_port *)p;
    for (unsigned i = 0; i < w->txq.n; i++)
        tw_port_free_burst(w->in, &w->txq.e[i].pkt, 1);
    for (unsigned i = 0; i < w->rxq.n; i++)
        tw_port_free_burst(w->in, &w->rxq.e[i].pkt, 1);
    free(w);
}

static const tw_port_ops impair_ops = {
    .name = "impair",
    .rx_burst = w_rx_burst,
    .tx_burst = w_tx_burst,
    .alloc_burst = w_alloc_burst,
    .free_burst = w_free_burst,
    .poll = w_poll,
    .rx_fd = w_rx_fd,
    .close = w_close,
};

int twi_wrap(tw_port **out, tw_port *inner)
{
    impair_port *w = calloc(1, sizeof(*w));
    if (!w)
        return -ENOMEM;
    w->base = *inner;
    w->base.ops = &impair_ops;
    w->in = inner;
    w->rng = 0x9e3779b97f4a7c15ull;
    *out = &w->base;
    return 0;
}

void twi_set(tw_port *p, const twi_config *cfg)
{
    impair_port *w = (impair_port *)p;
    w->cfg = *cfg;
    if (cfg->seed)
        w->rng = cfg->seed;
    w->link_free_ns = 0;
}

const twi_stats *twi_get_stats(const tw_port *p)
{
    return &((const impair_port *)p)->stats;
}
