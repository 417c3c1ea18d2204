/* Our side of the QuickFIX interop tests: tw_fix_session over kernel TCP
 * on loopback, with the crash-safe store.
 *
 *   tw_fix_peer --initiator --port P --store FILE --orders N [--gap-at K]
 *               [--die-at K] [--idle S] [--hb S] [--results FILE]
 *     Logs on, sends NewOrderSingle with ClOrdID next..N (a window of 64
 *     unanswered), resuming after the highest ClOrdID in the store, waits
 *     for the ExecutionReport of N, idles S seconds (heartbeats), logs out.
 *     --gap-at K skips 3 outgoing sequence numbers after order K;
 *     --die-at K SIGKILLs this process after order K is stored but before
 *     its bytes reach the socket (the worst moment for "sent twice").
 *   tw_fix_peer --acceptor --port P --store FILE [--gap-at K] [--die-at K]
 *               [--results FILE]
 *     Accepts one connection and answers each new ClOrdID with a filled
 *     ExecutionReport until the peer logs out.  ClOrdIDs with an
 *     ExecutionReport in the store count as executed (after a restart).
 *     --die-at K SIGKILLs it once the report for ClOrdID K is stored.
 *
 * --begin FIX.4.2 runs the session as FIX 4.2 (default FIX.4.4); --mmap
 * appends to the store through a shared mapping instead of pwritev.
 * Results ("key value" lines) go to --results for the test driver. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/fix_session.h"

#define MAX_ORDERS 1000000
#define WINDOW 64

static int sock = -1;
static int die_armed;
static int initiator;
static long n_orders, gap_at, die_at, idle_s, hb_s = 30;
static long next_id = 1, run_first_id, max_acked, acked_run, sent_run, orders_rcvd;
static unsigned char *acked; /* per ClOrdID: ER seen (initiator) / executed (acceptor) */
static long exec_seq;
static int logged_out;
static const char *results_path;
static const char *begin_string = "FIX.4.4";
static tw_fix_session sess;
static tw_fix_store store;

/* The session's clock: monotonic; SendingTime comes from the epoch
 * offset set in its cfg. */
static int64_t now_ns(void)
{
    return tw_clock_now_ns();
}

static int s_write(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    if (die_armed) {
        /* The order is in the store; it never reaches the wire. */
        kill(getpid(), SIGKILL);
    }
    while (len > 0) {
        ssize_t n = send(sock, buf, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void s_close(void *ctx)
{
    (void)ctx;
    if (sock >= 0)
        shutdown(sock, SHUT_RDWR);
}

static long field_long(const tw_fix_msg *m, uint32_t tag)
{
    const tw_fix_field *f = tw_fix_get(m, tag);
    int64_t v;
    if (!f || tw_fix_to_i64(f->val, f->len, &v) != 0)
        return -1;
    return (long)v;
}

static void on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    const tw_fix_msg *m = &d->msg;
    (void)ctx;
    int64_t now = now_ns();
    if (initiator) {
        if (m->msg_type_len != 1 || m->msg_type[0] != '8')
            return;
        long id = field_long(m, 11);
        if (id < 1 || id > n_orders)
            return;
        if (!acked[id]) {
            acked[id] = 1;
            if (id >= run_first_id)
                acked_run++;
        }
        if (id > max_acked)
            max_acked = id;
        return;
    }
    if (m->msg_type_len != 1 || m->msg_type[0] != 'D')
        return;
    long id = field_long(m, 11);
    if (id < 1 || id >= MAX_ORDERS)
        return;
    orders_rcvd++;
    if (acked[id]) /* a PossDup copy of one already executed */
        return;
    (void)possdup;
    acked[id] = 1;
    const tw_fix_field *sym = tw_fix_get(m, 55), *side = tw_fix_get(m, 54),
                       *qty = tw_fix_get(m, 38), *cl = tw_fix_get(m, 11);
    tw_fix_wbuf *w = tw_fix_session_begin(s, "8", now);
    if (!w || !sym || !side || !qty)
        return;
    tw_fix_put_u64(w, 37, (uint64_t)id);
    tw_fix_put_u64(w, 17, (uint64_t)++exec_seq);
    /* A fill: ExecType 2 with ExecTransType 0 in FIX 4.2, F in 4.4. */
    if (!sess.fix44)
        tw_fix_put_char(w, 20, '0');
    tw_fix_put_char(w, 150, sess.fix44 ? 'F' : '2');
    tw_fix_put_char(w, 39, '2');
    tw_fix_put_str(w, 11, cl->val, cl->len);
    tw_fix_put_str(w, 55, sym->val, sym->len);
    tw_fix_put_str(w, 54, side->val, side->len);
    tw_fix_put_str(w, 38, qty->val, qty->len);
    tw_fix_put_str(w, 32, qty->val, qty->len);
    tw_fix_put_fixed(w, 31, 108725, 5);
    tw_fix_put_u64(w, 151, 0);
    tw_fix_put_str(w, 14, qty->val, qty->len);
    tw_fix_put_fixed(w, 6, 108725, 5);
    tw_fix_put_ts(w, 60, tw_fix_session_epoch_ns(s, now), 3);
    if (id == die_at)
        die_armed = 1;
    if (tw_fix_session_send(s, now) != 0)
        fprintf(stderr, "tw_fix_peer: ExecutionReport not sent\n");
    if (gap_at && orders_rcvd == gap_at)
        tw_fix_session_set_next_out(s, s->next_out + 3);
}

static void on_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    (void)ctx, (void)s;
    if (ev == TW_FIX_EV_LOGOUT)
        logged_out = 1;
    if (ev != TW_FIX_EV_GARBLED)
        fprintf(stderr, "tw_fix_peer: event %d: %s\n", (int)ev, text);
}

/* Walks the stored messages of one type and returns the highest ClOrdID;
 * with mark set, flags every ClOrdID seen (the acceptor's record of what it
 * already executed, so a restart never fills an order twice). */
static long scan_store(char type, int mark)
{
    long max_id = 0;
    static char buf[8192];
    for (uint32_t i = 0; i < store.n; i++) {
        tw_fix_stored st;
        if (tw_fix_store_read(&store, i, buf, sizeof(buf), &st) != 0)
            continue;
        if (st.type_len != 1 || st.type[0] != type)
            continue;
        const char *p = st.body, *e = st.body + st.body_len;
        while (p < e) {
            const char *soh = memchr(p, '\x01', (size_t)(e - p));
            if (!soh)
                break;
            if (soh - p > 3 && memcmp(p, "11=", 3) == 0) {
                long v = strtol(p + 3, NULL, 10);
                if (v > max_id)
                    max_id = v;
                if (mark && v > 0 && v < MAX_ORDERS)
                    acked[v] = 1;
            }
            p = soh + 1;
        }
    }
    return max_id;
}

static void write_results(void)
{
    if (!results_path)
        return;
    FILE *f = fopen(results_path, "w");
    if (!f)
        return;
    const tw_fix_session_stats *st = &sess.st;
    fprintf(f, "run_first_id %ld\nnext_id %ld\nsent_run %ld\nacked_run %ld\nmax_acked %ld\n"
               "orders_rcvd %ld\nheartbeats_sent %llu\ntest_requests_sent %llu\n"
               "resend_requests_sent %llu\nresend_requests_rcvd %llu\nmsgs_resent %llu\n"
               "gap_fills_sent %llu\nrejects_sent %llu\nrejects_rcvd %llu\ngarbled %llu\n"
               "possdup_ignored %llu\nmsgs_in %llu\nmsgs_out %llu\nlogged_out %d\n",
            run_first_id, next_id, sent_run, acked_run, max_acked, orders_rcvd,
            (unsigned long long)st->heartbeats_sent, (unsigned long long)st->test_requests_sent,
            (unsigned long long)st->resend_requests_sent,
            (unsigned long long)st->resend_requests_rcvd, (unsigned long long)st->msgs_resent,
            (unsigned long long)st->gap_fills_sent, (unsigned long long)st->rejects_sent,
            (unsigned long long)st->rejects_rcvd, (unsigned long long)st->garbled,
            (unsigned long long)st->possdup_ignored, (unsigned long long)st->msgs_in,
            (unsigned long long)st->msgs_out, logged_out);
    fclose(f);
}

static int connect_to(int port)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    /* The acceptor may still be starting: retry for up to 20 s. */
    for (int tries = 0; tries < 200; tries++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -1;
        if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
            return fd;
        close(fd);
        usleep(100000);
    }
    return -1;
}

static int accept_on(int port)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0) {
        perror("tw_fix_peer: bind/listen");
        return -1;
    }
    printf("tw_fix_peer: listening on %d\n", port);
    fflush(stdout);
    int fd = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    close(l);
    return fd;
}

static void maybe_send_orders(int64_t now)
{
    if (!initiator || sess.state != TW_FIX_ACTIVE || sess.resend_until != 0)
        return;
    while (next_id <= n_orders && sent_run - acked_run < WINDOW) {
        tw_fix_wbuf *w = tw_fix_session_begin(&sess, "D", now);
        if (!w)
            return;
        tw_fix_put_u64(w, 11, (uint64_t)next_id);
        tw_fix_put_char(w, 21, '1');
        tw_fix_put_cstr(w, 55, "EURUSD");
        tw_fix_put_char(w, 54, next_id % 2 ? '1' : '2');
        tw_fix_put_ts(w, 60, tw_fix_session_epoch_ns(&sess, now), 3);
        tw_fix_put_u64(w, 38, (uint64_t)(100 + next_id % 7));
        tw_fix_put_char(w, 40, '2');
        tw_fix_put_fixed(w, 44, 108725, 5);
        if (next_id == die_at)
            die_armed = 1;
        if (tw_fix_session_send(&sess, now) != 0) {
            fprintf(stderr, "tw_fix_peer: send failed\n");
            return;
        }
        if (next_id == gap_at)
            tw_fix_session_set_next_out(&sess, sess.next_out + 3);
        next_id++;
        sent_run++;
    }
}

int main(int argc, char **argv)
{
    int port = 0;
    const char *store_path = NULL;
    tw_fix_fsync fs = TW_FIX_FSYNC_NONE;
    uint64_t mmap_bytes = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "0";
        if (!strcmp(a, "--initiator")) initiator = 1;
        else if (!strcmp(a, "--acceptor")) initiator = 0;
        else if (!strcmp(a, "--port")) port = atoi(v), i++;
        else if (!strcmp(a, "--store")) store_path = v, i++;
        else if (!strcmp(a, "--orders")) n_orders = atol(v), i++;
        else if (!strcmp(a, "--gap-at")) gap_at = atol(v), i++;
        else if (!strcmp(a, "--die-at")) die_at = atol(v), i++;
        else if (!strcmp(a, "--idle")) idle_s = atol(v), i++;
        else if (!strcmp(a, "--hb")) hb_s = atol(v), i++;
        else if (!strcmp(a, "--results")) results_path = v, i++;
        else if (!strcmp(a, "--begin")) begin_string = v, i++;
        else if (!strcmp(a, "--mmap")) mmap_bytes = 1 << 20;
        else if (!strcmp(a, "--fsync")) fs = !strcmp(v, "every") ? TW_FIX_FSYNC_EVERY : TW_FIX_FSYNC_NONE, i++;
        else {
            fprintf(stderr, "tw_fix_peer: unknown argument %s\n", a);
            return 2;
        }
    }
    if (!port || !store_path || n_orders < 0 || n_orders >= MAX_ORDERS) {
        fprintf(stderr, "tw_fix_peer: --port and --store are required\n");
        return 2;
    }
    acked = calloc(MAX_ORDERS, 1);
    tw_error err;
    tw_fix_store_cfg sc = { .path = store_path, .fsync = fs, .index_cap = 1 << 16,
                            .mmap_bytes = mmap_bytes };
    if (tw_fix_store_open(&store, &sc, &err) != 0) {
        fprintf(stderr, "tw_fix_peer: %s\n", err.msg);
        return 1;
    }
    if (store.torn_bytes)
        fprintf(stderr, "tw_fix_peer: store: cut a torn record of %llu bytes\n",
                (unsigned long long)store.torn_bytes);
    if (initiator)
        next_id = scan_store('D', 0) + 1;
    else
        scan_store('8', 1);
    run_first_id = next_id;
    tw_fix_session_cfg cfg = {
        .begin_string = begin_string, .sender_comp_id = "TW", .target_comp_id = "QF",
        .initiator = initiator, .heart_bt_int_s = (uint32_t)hb_s, .ts_digits = 3,
        .store = &store, .stream = { s_write, s_close, NULL }, .app = { .on_msg = on_msg, .on_event = on_event },
        .epoch_offset_ns = tw_clock_epoch_offset_ns(),
    };
    if (tw_fix_session_init(&sess, &cfg, &err) != 0) {
        fprintf(stderr, "tw_fix_peer: %s\n", err.msg);
        return 1;
    }
    sock = initiator ? connect_to(port) : accept_on(port);
    if (sock < 0) {
        fprintf(stderr, "tw_fix_peer: no connection on port %d\n", port);
        return 1;
    }
    int one = 1;
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tw_fix_session_connected(&sess, now_ns());
    static char rx[1 << 18];
    size_t rx_len = 0;
    int64_t idle_until = 0;
    int rc = 1;
    /* Bounded by the session itself: timeouts close it. */
    while (sess.state != TW_FIX_DISCONNECTED) {
        int64_t now = now_ns();
        maybe_send_orders(now);
        if (initiator && next_id > n_orders && acked[n_orders] && sess.state == TW_FIX_ACTIVE &&
            sess.resend_until == 0) {
            if (idle_until == 0)
                idle_until = now + idle_s * 1000000000LL;
            if (now >= idle_until)
                tw_fix_session_logout(&sess, "done", now);
        }
        struct pollfd p = { .fd = sock, .events = POLLIN };
        int pr = poll(&p, 1, 50);
        now = now_ns();
        if (pr > 0) {
            ssize_t n = recv(sock, rx + rx_len, sizeof(rx) - rx_len, 0);
            if (n <= 0) {
                tw_fix_session_disconnected(&sess, now);
                break;
            }
            rx_len += (size_t)n;
            size_t used = tw_fix_session_input(&sess, rx, rx_len, now);
            memmove(rx, rx + used, rx_len - used);
            rx_len -= used;
        }
        tw_fix_session_timer(&sess, now);
    }
    if (logged_out)
        rc = 0;
    if (initiator) {
        /* Name the first few orders this run never saw answered. */
        int shown = 0;
        for (long id = run_first_id; id <= n_orders && shown < 10; id++)
            if (!acked[id]) {
                fprintf(stderr, "tw_fix_peer: no ExecutionReport for ClOrdID %ld\n", id);
                shown++;
            }
    }
    write_results();
    fprintf(stderr, "tw_fix_peer: done: sent %ld acked %ld rcvd %ld hb %llu rr %llu gf %llu resent %llu\n",
            sent_run, acked_run, orders_rcvd, (unsigned long long)sess.st.heartbeats_sent,
            (unsigned long long)sess.st.resend_requests_sent,
            (unsigned long long)sess.st.gap_fills_sent, (unsigned long long)sess.st.msgs_resent);
    close(sock);
    tw_fix_store_close(&store);
    free(acked);
    return rc;
}
