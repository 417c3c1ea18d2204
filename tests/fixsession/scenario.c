/* FIX session scenario interpreter (libtrading style): runs a script
 * against a real tw_fix_session over a scripted peer and a simulated
 * clock.  Exit 0 when every expectation holds, 1 with the failing line.
 *
 * Script lines ('|' stands for SOH; '#' starts a comment):
 *   config initiator=1 begin=FIX.4.4 sender=TW target=PEER hb=30 reset=0
 *   connect                    stream comes up (an initiator sends Logon)
 *   < 35=0|34=2|...            the peer sends this; 8, 9 and 10 are added,
 *                              and 49/56/52 after 35 unless given (a value
 *                              of "-" leaves a field out)
 *   <raw 8=FIX.4.4|9=...       the peer sends these exact bytes
 *   > 35=A|34=1|98=0|108=30    the session must have sent this message next:
 *                              fields other than 8/9/10 (and 52 unless
 *                              listed) compared in order; value "*" matches
 *                              anything; framing and CheckSum verified
 *   expect-none                nothing more was sent
 *   +5s / +500ms               advance the clock (the timer runs each second)
 *   app 11=O1|55=X             an application message was delivered with
 *   app-possdup 11=O1          these fields (possdup: with PossDupFlag=Y)
 *   no-app                     no application message is waiting
 *   send 35=D|11=O1|55=X       the application sends a message
 *   logout [text]              the application starts a logout
 *   set-next-out N             jump our outgoing MsgSeqNum (inject a gap)
 *   state ACTIVE               session state
 *   seq out=N in=M             next sequence numbers
 *   closed / open              whether the session closed the stream
 *   restart                    drop session and store, reopen both from
 *                              the store file (as after kill -9)
 *
 * Usage: fix_session_scenario FILE...   (--expect-fail FILE: the script
 * must fail, which tests the interpreter itself). */
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

#include "tickwire/fix_session.h"

#define OUT_CAP (1 << 20)
#define MAX_APP 64

typedef struct app_msg {
    char raw[2048];
    size_t len;
    int possdup;
} app_msg;

typedef struct sim {
    const char *file;
    int line;
    char store_path[256];
    tw_fix_store store;
    tw_fix_session s;
    tw_fix_session_cfg cfg;
    int have_session;
    char begin[16], sender[64], target[64];
    int initiator, reset;
    unsigned hb;
    int64_t now_ns;
    char out[OUT_CAP];
    size_t out_len, out_pos;
    int closed;
    app_msg app[MAX_APP];
    int napp, app_pos;
    int failed;
    int quiet;
} sim;

static int fail(sim *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(sim *m, const char *fmt, ...)
{
    if (!m->quiet) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "%s:%d: ", m->file, m->line);
        vfprintf(stderr, fmt, ap);
        fprintf(stderr, "\n");
        va_end(ap);
    }
    m->failed = 1;
    return -1;
}

static int s_write(void *ctx, const char *buf, size_t len)
{
    sim *m = ctx;
    if (m->out_len + len > OUT_CAP)
        return -ENOBUFS;
    memcpy(m->out + m->out_len, buf, len);
    m->out_len += len;
    return 0;
}

static void s_close(void *ctx)
{
    sim *m = ctx;
    m->closed = 1;
}

static void s_on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    const tw_fix_msg *msg = &d->msg;
    sim *m = ctx;
    (void)s;
    if (m->napp == MAX_APP)
        return;
    /* Re-serialise the fields (the view dies after the call). */
    app_msg *a = &m->app[m->napp++];
    a->len = 0;
    a->possdup = possdup;
    for (uint32_t i = 0; i < msg->count; i++) {
        const tw_fix_field *f = &msg->fields[i];
        int n = snprintf(a->raw + a->len, sizeof(a->raw) - a->len, "%u=%.*s\x01", f->tag,
                         (int)f->len, f->val);
        if (n < 0 || (size_t)n >= sizeof(a->raw) - a->len)
            break;
        a->len += (size_t)n;
    }
}

static void s_on_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    (void)ctx, (void)s, (void)ev, (void)text;
}

static int open_session(sim *m)
{
    tw_error err;
    tw_fix_store_cfg sc = { .path = m->store_path, .fsync = TW_FIX_FSYNC_NONE };
    if (tw_fix_store_open(&m->store, &sc, &err) != 0)
        return fail(m, "store open: %s", err.msg);
    memset(&m->cfg, 0, sizeof(m->cfg));
    m->cfg.begin_string = m->begin;
    m->cfg.sender_comp_id = m->sender;
    m->cfg.target_comp_id = m->target;
    m->cfg.initiator = m->initiator;
    m->cfg.heart_bt_int_s = m->hb;
    m->cfg.reset_on_logon = m->reset;
    m->cfg.ts_digits = 3;
    m->cfg.store = &m->store;
    m->cfg.stream = (tw_fix_stream){ s_write, s_close, m };
    m->cfg.app = (tw_fix_app){ .on_msg = s_on_msg, .on_event = s_on_event, .ctx = m };
    if (tw_fix_session_init(&m->s, &m->cfg, &err) != 0)
        return fail(m, "session init: %s", err.msg);
    m->have_session = 1;
    return 0;
}

static void close_session(sim *m)
{
    if (!m->have_session)
        return;
    tw_fix_store_close(&m->store);
    m->have_session = 0;
}

/* Splits "a=b|c=d" into fields (in place). */
typedef struct kv {
    uint32_t tag;
    const char *val;
    size_t len;
} kv;

static int split(sim *m, char *text, kv *out, int cap)
{
    int n = 0;
    char *p = text;
    while (*p) {
        char *e = strchr(p, '|');
        if (e)
            *e = 0;
        if (*p) {
            char *eq = strchr(p, '=');
            if (!eq || n == cap)
                return fail(m, "bad field list near '%s'", p);
            *eq = 0;
            out[n].tag = (uint32_t)strtoul(p, NULL, 10);
            out[n].val = eq + 1;
            out[n].len = strlen(eq + 1);
            n++;
        }
        if (!e)
            break;
        p = e + 1;
    }
    return n;
}

static const kv *find_kv(const kv *f, int n, uint32_t tag)
{
    for (int i = 0; i < n; i++)
        if (f[i].tag == tag)
            return &f[i];
    return NULL;
}

static int peer_send(sim *m, char *text)
{
    kv f[128];
    int n = split(m, text, f, 128);
    if (n < 0)
        return -1;
    const kv *t35 = find_kv(f, n, 35);
    if (!t35)
        return fail(m, "'<' needs 35=");
    char body[4096];
    size_t bl = 0;
#define ADD(tag, v, l)                                                                  \
    do {                                                                                \
        bl += (size_t)snprintf(body + bl, sizeof(body) - bl, "%u=%.*s\x01", (tag), (int)(l), (v)); \
    } while (0)
    ADD(35u, t35->val, t35->len);
    if (!find_kv(f, n, 49))
        ADD(49u, m->target, strlen(m->target));
    if (!find_kv(f, n, 56))
        ADD(56u, m->sender, strlen(m->sender));
    if (!find_kv(f, n, 52)) {
        char ts[32];
        size_t tl = tw_fix_fmt_ts(ts, m->now_ns, 3);
        ADD(52u, ts, tl);
    }
    for (int i = 0; i < n; i++) {
        if (f[i].tag == 35 || (f[i].len == 1 && f[i].val[0] == '-'))
            continue;
        ADD(f[i].tag, f[i].val, f[i].len);
    }
#undef ADD
    char msg[4200];
    size_t ml = (size_t)snprintf(msg, sizeof(msg), "8=%s\x01" "9=%zu\x01%s", m->begin, bl, body);
    unsigned sum = 0;
    for (size_t i = 0; i < ml; i++)
        sum += (unsigned char)msg[i];
    ml += (size_t)snprintf(msg + ml, sizeof(msg) - ml, "10=%03u\x01", sum & 255);
    size_t used = tw_fix_session_input(&m->s, msg, ml, m->now_ns);
    if (used != ml)
        return fail(m, "session consumed %zu of %zu bytes", used, ml);
    return 0;
}

static int peer_raw(sim *m, const char *text)
{
    char msg[4096];
    size_t ml = 0;
    for (const char *p = text; *p && ml < sizeof(msg); p++)
        msg[ml++] = *p == '|' ? '\x01' : *p;
    /* Raw bytes may be an incomplete message: whatever is not consumed is
     * what a stream would keep; garbage must be consumed. */
    tw_fix_session_input(&m->s, msg, ml, m->now_ns);
    return 0;
}

static int expect_out(sim *m, char *text)
{
    kv e[128];
    int ne = split(m, text, e, 128);
    if (ne < 0)
        return -1;
    if (m->out_pos >= m->out_len)
        return fail(m, "expected an outgoing message, none was sent");
    size_t skip = 0;
    const char *p = m->out + m->out_pos;
    int r = tw_fix_frame(p, m->out_len - m->out_pos, 0, &skip);
    if (r <= 0)
        return fail(m, "outgoing bytes do not frame (rc %d)", r);
    tw_fix_field fields[256];
    tw_fix_msg msg = { .fields = fields, .cap = 256 };
    if (tw_fix_parse(p, (size_t)r, &msg) != 0)
        return fail(m, "outgoing message does not parse");
    char shown[2048];
    size_t sl = 0;
    for (int i = 0; i < r && sl < sizeof(shown) - 1; i++)
        shown[sl++] = p[i] == '\x01' ? '|' : p[i];
    shown[sl] = 0;
    m->out_pos += (size_t)r;
    int want52 = find_kv(e, ne, 52) != NULL;
    int k = 0;
    for (uint32_t i = 0; i < msg.count; i++) {
        const tw_fix_field *f = &msg.fields[i];
        if (f->tag == 8 || f->tag == 9 || f->tag == 10 || (f->tag == 52 && !want52))
            continue;
        while (k < ne && (e[k].tag == 8 || e[k].tag == 9 || e[k].tag == 10))
            k++;
        if (k >= ne)
            return fail(m, "extra field %u in sent message\n  got: %s", f->tag, shown);
        if (e[k].tag != f->tag)
            return fail(m, "field %d: expected tag %u, got %u\n  got: %s", k, e[k].tag, f->tag,
                        shown);
        if (!(e[k].len == 1 && e[k].val[0] == '*') &&
            (e[k].len != f->len || memcmp(e[k].val, f->val, f->len) != 0))
            return fail(m, "tag %u: expected '%.*s', got '%.*s'\n  got: %s", f->tag,
                        (int)e[k].len, e[k].val, (int)f->len, f->val, shown);
        k++;
    }
    if (k < ne)
        return fail(m, "sent message lacks tag %u\n  got: %s", e[k].tag, shown);
    return 0;
}

static int expect_app(sim *m, char *text, int possdup)
{
    if (m->app_pos >= m->napp)
        return fail(m, "expected an application message, none delivered");
    app_msg *a = &m->app[m->app_pos++];
    if (a->possdup != possdup)
        return fail(m, "application message possdup=%d, expected %d", a->possdup, possdup);
    kv e[64];
    int ne = split(m, text, e, 64);
    if (ne < 0)
        return -1;
    for (int i = 0; i < ne; i++) {
        char pat[300];
        snprintf(pat, sizeof(pat), "\x01%u=%.*s\x01", e[i].tag, (int)e[i].len, e[i].val);
        char hay[2100];
        hay[0] = '\x01';
        memcpy(hay + 1, a->raw, a->len);
        hay[a->len + 1] = 0;
        if (!strstr(hay, pat))
            return fail(m, "application message lacks %u=%.*s", e[i].tag, (int)e[i].len,
                        e[i].val);
    }
    return 0;
}

static int app_send(sim *m, char *text)
{
    kv f[64];
    int n = split(m, text, f, 64);
    if (n < 0)
        return -1;
    const kv *t35 = find_kv(f, n, 35);
    if (!t35)
        return fail(m, "send needs 35=");
    char type[9];
    snprintf(type, sizeof(type), "%.*s", (int)t35->len, t35->val);
    tw_fix_wbuf *w = tw_fix_session_begin(&m->s, type, m->now_ns);
    if (!w)
        return fail(m, "send: session not active (%s)", tw_fix_state_name(m->s.state));
    for (int i = 0; i < n; i++)
        if (f[i].tag != 35)
            tw_fix_put_str(w, f[i].tag, f[i].val, f[i].len);
    int rc = tw_fix_session_send(&m->s, m->now_ns);
    if (rc != 0)
        return fail(m, "send failed: %d", rc);
    return 0;
}

static int advance(sim *m, const char *arg)
{
    char *end;
    double v = strtod(arg, &end);
    int64_t ns;
    if (strcmp(end, "s") == 0)
        ns = (int64_t)(v * 1e9);
    else if (strcmp(end, "ms") == 0)
        ns = (int64_t)(v * 1e6);
    else
        return fail(m, "bad time step '%s'", arg);
    /* Step at most a second at a time, like a caller's periodic timer. */
    while (ns > 0) {
        int64_t step = ns < 1000000000 ? ns : 1000000000;
        m->now_ns += step;
        ns -= step;
        tw_fix_session_timer(&m->s, m->now_ns);
    }
    return 0;
}

static int config(sim *m, char *args)
{
    for (char *tok = strtok(args, " \t"); tok; tok = strtok(NULL, " \t")) {
        char *eq = strchr(tok, '=');
        if (!eq)
            return fail(m, "bad config '%s'", tok);
        *eq = 0;
        const char *v = eq + 1;
        if (!strcmp(tok, "initiator"))
            m->initiator = atoi(v);
        else if (!strcmp(tok, "begin"))
            snprintf(m->begin, sizeof(m->begin), "%s", v);
        else if (!strcmp(tok, "sender"))
            snprintf(m->sender, sizeof(m->sender), "%s", v);
        else if (!strcmp(tok, "target"))
            snprintf(m->target, sizeof(m->target), "%s", v);
        else if (!strcmp(tok, "hb"))
            m->hb = (unsigned)atoi(v);
        else if (!strcmp(tok, "reset"))
            m->reset = atoi(v);
        else
            return fail(m, "unknown config key '%s'", tok);
    }
    close_session(m);
    unlink(m->store_path);
    return open_session(m);
}

static int run_line(sim *m, char *l)
{
    while (*l == ' ' || *l == '\t')
        l++;
    size_t n = strlen(l);
    while (n > 0 && (l[n - 1] == '\n' || l[n - 1] == '\r' || l[n - 1] == ' '))
        l[--n] = 0;
    if (n == 0 || l[0] == '#')
        return 0;
    if (!strncmp(l, "config", 6))
        return config(m, l + 6);
    if (!m->have_session && open_session(m) != 0)
        return -1;
    if (!strncmp(l, "<raw ", 5))
        return peer_raw(m, l + 5);
    if (l[0] == '<')
        return peer_send(m, l + 1 + strspn(l + 1, " "));
    if (l[0] == '>')
        return expect_out(m, l + 1 + strspn(l + 1, " "));
    if (l[0] == '+')
        return advance(m, l + 1);
    if (!strcmp(l, "connect")) {
        m->closed = 0;
        tw_fix_session_connected(&m->s, m->now_ns);
        return 0;
    }
    if (!strcmp(l, "expect-none")) {
        if (m->out_pos < m->out_len) {
            char shown[512];
            size_t k = 0;
            for (size_t i = m->out_pos; i < m->out_len && k < sizeof(shown) - 1; i++)
                shown[k++] = m->out[i] == '\x01' ? '|' : m->out[i];
            shown[k] = 0;
            return fail(m, "unexpected outgoing bytes: %s", shown);
        }
        return 0;
    }
    if (!strncmp(l, "app-possdup", 11))
        return expect_app(m, l + 11 + strspn(l + 11, " "), 1);
    if (!strncmp(l, "app", 3) && (l[3] == ' ' || l[3] == 0))
        return expect_app(m, l + 3 + strspn(l + 3, " "), 0);
    if (!strcmp(l, "no-app"))
        return m->app_pos < m->napp ? fail(m, "unexpected application message") : 0;
    if (!strncmp(l, "send ", 5))
        return app_send(m, l + 5);
    if (!strncmp(l, "logout", 6)) {
        const char *t = l[6] ? l + 7 : NULL;
        if (tw_fix_session_logout(&m->s, t, m->now_ns) != 0)
            return fail(m, "logout failed");
        return 0;
    }
    if (!strncmp(l, "set-next-out ", 13))
        return tw_fix_session_set_next_out(&m->s, strtoull(l + 13, NULL, 10)) == 0
                   ? 0
                   : fail(m, "set-next-out failed");
    if (!strncmp(l, "state ", 6)) {
        const char *got = tw_fix_state_name(m->s.state);
        return strcmp(got, l + 6) ? fail(m, "state %s, expected %s", got, l + 6) : 0;
    }
    if (!strncmp(l, "seq ", 4)) {
        unsigned long long o = 0, i = 0;
        if (sscanf(l + 4, "out=%llu in=%llu", &o, &i) != 2)
            return fail(m, "bad seq line");
        if (m->s.next_out != o || m->s.next_in != i)
            return fail(m, "seq out=%llu in=%llu, expected out=%llu in=%llu",
                        (unsigned long long)m->s.next_out, (unsigned long long)m->s.next_in, o, i);
        return 0;
    }
    if (!strcmp(l, "closed"))
        return m->closed ? 0 : fail(m, "session did not close the stream");
    if (!strcmp(l, "open"))
        return m->closed ? fail(m, "session closed the stream") : 0;
    if (!strcmp(l, "restart")) {
        /* As after kill -9: nothing is flushed or closed gracefully (the
         * store is append-only, so closing the fd changes nothing). */
        close_session(m);
        m->out_pos = m->out_len;
        m->closed = 0;
        return open_session(m);
    }
    return fail(m, "unknown directive '%s'", l);
}

static int run_file(const char *path, int quiet)
{
    static sim m; /* large: keep it off the stack */
    memset(&m, 0, sizeof(m));
    m.file = path;
    m.quiet = quiet;
    snprintf(m.begin, sizeof(m.begin), "FIX.4.4");
    snprintf(m.sender, sizeof(m.sender), "TW");
    snprintf(m.target, sizeof(m.target), "PEER");
    m.initiator = 1;
    m.hb = 30;
    snprintf(m.store_path, sizeof(m.store_path), "/tmp/tw_fixscen_%d.store", (int)getpid());
    unlink(m.store_path);
    /* 2026-01-02 03:04:05 UTC */
    TW_VERIFY(tw_fix_to_epoch_ns("20260102-03:04:05", 17, &m.now_ns) == 0);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        return -1;
    }
    char line[4096];
    while (fgets(line, sizeof(line), f)) {
        m.line++;
        if (run_line(&m, line) != 0)
            break;
    }
    fclose(f);
    close_session(&m);
    unlink(m.store_path);
    return m.failed ? -1 : 0;
}

int main(int argc, char **argv)
{
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--expect-fail") && i + 1 < argc) {
            i++;
            if (run_file(argv[i], 1) == 0) {
                fprintf(stderr, "%s: passed but must fail\n", argv[i]);
                rc = 1;
            } else {
                printf("%s: failed as it must\n", argv[i]);
            }
            continue;
        }
        if (run_file(argv[i], 0) != 0)
            rc = 1;
        else
            printf("%s: ok\n", argv[i]);
    }
    return rc;
}
