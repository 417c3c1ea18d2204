/* Crash and restart at every point: the session sends K orders to a
 * simulated peer (which answers each with a Heartbeat, so inbound sequence
 * numbers are persisted too); the process "dies" at write number w (the
 * message being written never reaches the peer), with the store cut at the
 * size it had then, at the size before that message's records, or in the
 * middle of its last record (torn).  A new session opens the store, logs
 * on, answers the peer's ResendRequest, and the application resumes after
 * the highest ClOrdID in the store.  For every crash point the peer must
 * end up with every order 1..K, none of them twice as new, and must never
 * see a MsgSeqNum below what it expects without PossDupFlag. */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tickwire/fix_session.h"

#define K 12
#define MAXW 256

static char path[256];
static uint64_t g_mmap; /* store mode under test: 0 pwritev, else mmap_bytes */

typedef struct peer {
    tw_fix_template t;
    uint64_t expect_in, next_out;
    int rr_pending;
    int new_count[K + 1], pd_count[K + 1];
    int errors;
    /* bytes from us, and bytes to us */
    char in[1 << 16];
    size_t in_len;
    char out[1 << 16];
    size_t out_len;
} peer;

typedef struct world {
    peer p;
    tw_fix_store store;
    tw_fix_session s;
    int64_t now;
    int writes, crash_at, crashed;
    uint64_t size_at_write[MAXW]; /* store size when write i happened */
    uint64_t size_before_msg;     /* store size before the current message's records */
} world;

static world W;

static int w_write(void *ctx, const char *buf, size_t len)
{
    world *w = ctx;
    if (w->crashed)
        return -1;
    w->writes++;
    if (w->writes < MAXW)
        w->size_at_write[w->writes] = w->store.size;
    if (w->writes == w->crash_at) {
        w->crashed = 1; /* dies before the bytes leave */
        return -1;
    }
    TW_VERIFY(w->p.in_len + len <= sizeof(w->p.in));
    memcpy(w->p.in + w->p.in_len, buf, len);
    w->p.in_len += len;
    return 0;
}

static void w_close(void *ctx)
{
    (void)ctx;
}

static void peer_send(peer *p, const char *type, void (*fill)(tw_fix_wbuf *, uint64_t, uint64_t),
                      uint64_t a, uint64_t b, int64_t now)
{
    char buf[512];
    tw_fix_wbuf wb;
    tw_fix_build_begin(&wb, &p->t, buf, sizeof(buf), type, p->next_out++, now);
    if (fill)
        fill(&wb, a, b);
    const char *m;
    size_t len;
    TW_VERIFY(tw_fix_build_end(&wb, &m, &len) == 0);
    memcpy(p->out + p->out_len, m, len);
    p->out_len += len;
}

static void fill_logon(tw_fix_wbuf *w, uint64_t a, uint64_t b)
{
    (void)a, (void)b;
    tw_fix_put_char(w, 98, '0');
    tw_fix_put_u64(w, 108, 30);
}

static void fill_rr(tw_fix_wbuf *w, uint64_t a, uint64_t b)
{
    tw_fix_put_u64(w, 7, a);
    tw_fix_put_u64(w, 16, b);
}

/* The peer's answer to our ResendRequest: everything it sent was admin,
 * so one GapFill to its next number (sent under the first requested). */
static void peer_gap_fill(peer *p, uint64_t from, int64_t now)
{
    char buf[512];
    tw_fix_wbuf wb;
    tw_fix_build_begin_raw(&wb, &p->t, buf, sizeof(buf), "4");
    tw_fix_put_u64(&wb, 34, from);
    tw_fix_put_char(&wb, 43, 'Y');
    tw_fix_put_ts(&wb, 52, now, 3);
    tw_fix_put_ts(&wb, 122, now, 3);
    tw_fix_put_char(&wb, 123, 'Y');
    tw_fix_put_u64(&wb, 36, p->next_out);
    const char *m;
    size_t len;
    TW_VERIFY(tw_fix_build_end(&wb, &m, &len) == 0);
    memcpy(p->out + p->out_len, m, len);
    p->out_len += len;
}

static void peer_process(peer *p, int64_t now)
{
    size_t pos = 0;
    while (pos < p->in_len) {
        size_t skip;
        int r = tw_fix_frame(p->in + pos, p->in_len - pos, 0, &skip);
        TW_VERIFY(r > 0); /* the session writes whole valid messages */
        tw_fix_field f[64];
        tw_fix_msg m = { .fields = f, .cap = 64 };
        TW_VERIFY(tw_fix_parse(p->in + pos, (size_t)r, &m) == 0);
        pos += (size_t)r;
        int64_t seq, v;
        const tw_fix_field *fs = tw_fix_get(&m, 34), *pd = tw_fix_get(&m, 43);
        TW_VERIFY(fs && tw_fix_to_i64(fs->val, fs->len, &seq) == 0);
        int possdup = pd && pd->val[0] == 'Y';
        char t = m.msg_type[0];
        if (t == 'A') {
            peer_send(p, "A", fill_logon, 0, 0, now);
        }
        if ((uint64_t)seq < p->expect_in) {
            if (!possdup) {
                fprintf(stderr, "peer: MsgSeqNum %lld below %llu without PossDup\n",
                        (long long)seq, (unsigned long long)p->expect_in);
                p->errors++;
            }
            continue;
        }
        if ((uint64_t)seq > p->expect_in) {
            /* A gap: ask once, drop what is beyond it (the resend brings
             * it); a Logon from beyond the gap has been answered above. */
            if (!p->rr_pending) {
                p->rr_pending = 1;
                peer_send(p, "2", fill_rr, p->expect_in, 0, now);
            }
            continue;
        }
        p->expect_in = (uint64_t)seq + 1;
        if (t == '4') {
            const tw_fix_field *ns = tw_fix_get(&m, 36);
            TW_VERIFY(ns && tw_fix_to_i64(ns->val, ns->len, &v) == 0);
            p->expect_in = (uint64_t)v;
        } else if (t == '2') {
            const tw_fix_field *b = tw_fix_get(&m, 7);
            TW_VERIFY(b && tw_fix_to_i64(b->val, b->len, &v) == 0);
            peer_gap_fill(p, (uint64_t)v, now);
        } else if (t == 'D') {
            const tw_fix_field *id = tw_fix_get(&m, 11);
            TW_VERIFY(id && tw_fix_to_i64(id->val, id->len, &v) == 0 && v >= 1 && v <= K);
            (possdup ? p->pd_count : p->new_count)[v]++;
            /* Inbound traffic for us to persist. */
            peer_send(p, "0", NULL, 0, 0, now);
        }
        if (p->rr_pending && t != 'A')
            p->rr_pending = 0;
    }
    p->in_len = 0;
}

/* Runs both sides until neither has anything to say. */
static void pump(world *w)
{
    for (int rounds = 0; rounds < 1000 && !w->crashed; rounds++) {
        peer_process(&w->p, w->now);
        if (w->p.out_len == 0)
            return;
        char tmp[1 << 16];
        size_t n = w->p.out_len;
        memcpy(tmp, w->p.out, n);
        w->p.out_len = 0;
        size_t used = tw_fix_session_input(&w->s, tmp, n, w->now);
        TW_VERIFY(used == n || w->crashed || w->s.state == TW_FIX_DISCONNECTED);
    }
}

static long resume_point(tw_fix_store *st)
{
    long max_id = 0;
    char buf[1024];
    for (uint32_t i = 0; i < st->n; i++) {
        tw_fix_stored m;
        TW_VERIFY(tw_fix_store_read(st, i, buf, sizeof(buf), &m) == 0);
        TW_VERIFY(m.body_len > 3 && memcmp(m.body, "11=", 3) == 0);
        long v = strtol(m.body + 3, NULL, 10);
        if (v > max_id)
            max_id = v;
    }
    return max_id;
}

static int open_session(world *w)
{
    tw_error err;
    tw_fix_store_cfg sc = { .path = path, .fsync = TW_FIX_FSYNC_NONE, .mmap_bytes = g_mmap };
    if (tw_fix_store_open(&w->store, &sc, &err) != 0) {
        fprintf(stderr, "store: %s\n", err.msg);
        return -1;
    }
    tw_fix_session_cfg cfg = { .begin_string = "FIX.4.4", .sender_comp_id = "TW",
                               .target_comp_id = "PEER", .initiator = 1, .heart_bt_int_s = 30,
                               .ts_digits = 3, .store = &w->store,
                               .stream = { w_write, w_close, w } };
    TW_VERIFY(tw_fix_session_init(&w->s, &cfg, NULL) == 0);
    tw_fix_session_connected(&w->s, w->now);
    pump(w);
    return 0;
}

static void send_orders(world *w, long from)
{
    for (long id = from; id <= K && !w->crashed; id++) {
        w->now += 1000000;
        tw_fix_wbuf *b = tw_fix_session_begin(&w->s, "D", w->now);
        if (!b)
            return; /* not logged on: reported by the caller's checks */
        tw_fix_put_u64(b, 11, (uint64_t)id);
        tw_fix_put_cstr(b, 55, "EURUSD");
        tw_fix_put_char(b, 54, '1');
        tw_fix_put_u64(b, 38, 100);
        tw_fix_put_char(b, 40, '1');
        int rc = tw_fix_session_send(&w->s, w->now);
        TW_VERIFY(rc == 0 || w->crashed);
        pump(w);
    }
}

static void init_world(world *w)
{
    memset(w, 0, sizeof(*w));
    TW_VERIFY(tw_fix_template_init(&w->p.t, "FIX.4.4", "PEER", "TW", NULL, NULL, 3, NULL) == 0);
    w->p.expect_in = 1;
    w->p.next_out = 1;
    w->now = 1767323045000000000LL;
}

/* One crash scenario; returns the number of invariant violations. */
static int run_case(int crash_at, int cut_mode, int *total_writes)
{
    world *w = &W;
    init_world(w);
    unlink(path);
    w->crash_at = crash_at;
    if (open_session(w) != 0)
        return 1;
    send_orders(w, 1);
    if (total_writes)
        *total_writes = w->writes;
    if (!w->crashed) {
        tw_fix_store_close(&w->store);
        return crash_at == 0 ? 0 : -1; /* no such crash point */
    }
    /* Cut the store: 0 = as it was at the crash, 1 = before this write's
     * records (the previous write's size), 2 = torn: halfway between. */
    uint64_t at = w->store.size;
    uint64_t prev = crash_at > 1 ? w->size_at_write[crash_at - 1] : 8;
    uint64_t cut = cut_mode == 0 ? at : cut_mode == 1 ? prev : prev + (at - prev) / 2;
    tw_fix_store_close(&w->store);
    TW_VERIFY(truncate(path, (off_t)cut) == 0);
    /* An mmap-mode store dies with zeroed free space after its records. */
    if (g_mmap)
        TW_VERIFY(truncate(path, (off_t)(cut + 65536)) == 0);
    /* Restart: the peer keeps its state, our process starts afresh. */
    w->crashed = 0;
    w->crash_at = 0;
    w->p.in_len = 0;
    w->p.out_len = 0;
    w->p.rr_pending = 0;
    w->now += 5000000000LL;
    if (open_session(w) != 0)
        return 1;
    long from = resume_point(&w->store) + 1;
    send_orders(w, from);
    pump(w);
    tw_fix_store_close(&w->store);
    int bad = w->p.errors;
    for (int id = 1; id <= K; id++) {
        if (w->p.new_count[id] + w->p.pd_count[id] == 0) {
            fprintf(stderr, "crash at write %d cut %d: order %d lost\n", crash_at, cut_mode, id);
            bad++;
        }
        if (w->p.new_count[id] > 1) {
            fprintf(stderr, "crash at write %d cut %d: order %d sent twice as new\n", crash_at,
                    cut_mode, id);
            bad++;
        }
    }
    if (w->s.state != TW_FIX_ACTIVE) {
        fprintf(stderr, "crash at write %d cut %d: session %s after restart\n", crash_at, cut_mode,
                tw_fix_state_name(w->s.state));
        bad++;
    }
    return bad;
}

int main(void)
{
    snprintf(path, sizeof(path), "/tmp/tw_fixcrash_%d.store", (int)getpid());
    int total = 0, bad = 0, cases = 0;
    for (int sm = 0; sm < 2; sm++) {
        g_mmap = sm ? 4096 : 0;
        bad += run_case(0, 0, &total);
        TW_VERIFY(total > K); /* logon + orders at least */
        for (int c = 1; c <= total; c++)
            for (int mode = 0; mode < 3; mode++) {
                int r = run_case(c, mode, NULL);
                if (r < 0)
                    continue;
                bad += r;
                cases++;
            }
    }
    unlink(path);
    if (bad) {
        fprintf(stderr, "fix_session_crash: %d violations in %d cases\n", bad, cases);
        return 1;
    }
    printf("fix_session_crash: %d crash points x 3 cuts x 2 store modes, no order lost or "
           "duplicated\n", total);
    return 0;
}
