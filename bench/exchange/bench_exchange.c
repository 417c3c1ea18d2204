/* tickwire bench exchange: what the venue (tickwire exchange) costs.
 *
 *  1. Bars per second `tickwire exchange` streams over kernel TCP on
 *     loopback to 1 and to 4 trader sessions, flat out (--rate 0) and in
 *     lockstep (one TestRequest/Heartbeat round trip through the barrier
 *     per bar).  The venue is the real program (this binary, `exchange`);
 *     the traders are FIX sessions of our own in threads of this process.
 *     Yardsticks in the same run: a bare sender writing the same X bytes
 *     over loopback TCP to one reader (flat out), and a bare ping-pong of
 *     TestRequest/Heartbeat-sized messages between two threads (lockstep).
 *  2. The venue's own time per bar (CPU time of its thread, so that the
 *     other processes of a shared machine do not count), format + send (the library in-process,
 *     one session, X entries formatted with the exact decimal, the
 *     session's store appended, the message built and send() on a loopback
 *     socket), next to a plain send() of the same bytes, interleaved, in
 *     the same run.
 * Every figure is checked before it is printed (each trader saw every bar
 * once, in order, and the Closed at the end). */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/stats.h"
#include "tickwire/clock.h"
#include "tickwire/exchange.h"
#include "tickwire/fix_session.h"
#include "tickwire/kernel.h"

int tw__cli_bench_exchange(int argc, char **argv);

#define MAX_TRADERS 4

/* ---- the traders ------------------------------------------------------------- */

typedef struct trader {
    int fd;
    int id;
    tw_fix_session fs;
    uint64_t n_bars, next_bar, bad;
    int closed, logged_out, failed;
    int64_t t_first, t_closed;
    char rx[TW_FIX_RX_MIN * 2];
    size_t rx_len;
    pthread_t th;
    uint16_t port;
} trader;

static int t_write(void *ctx, const char *b, size_t n)
{
    trader *t = ctx;
    while (n) {
        ssize_t k = send(t->fd, b, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -EPIPE;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static void t_close(void *ctx)
{
    trader *t = ctx;
    shutdown(t->fd, SHUT_RDWR);
}

static void t_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    trader *t = ctx;
    const tw_fix_msg *m = &d->msg;
    (void)possdup;
    if (m->msg_type_len != 1)
        return;
    if (m->msg_type[0] == 'X') {
        /* One symbol: one entry per X; its 278 is the bar. */
        const tw_fix_field *f = tw_fix_get(m, 278);
        int64_t b = -1;
        if (!f || tw_fix_to_i64(f->val, f->len, &b) != 0 || (uint64_t)b != t->next_bar)
            t->bad++;
        t->next_bar = (uint64_t)b + 1;
        if (t->next_bar == 1)
            t->t_first = tw_clock_now_ns();
    } else if (m->msg_type[0] == 'h') {
        const tw_fix_field *f = tw_fix_get(m, 340);
        if (f && f->len == 1 && f->val[0] == '3') {
            t->t_closed = tw_clock_now_ns();
            t->closed = 1;
            tw_fix_session_logout(s, NULL, tw_clock_now_ns());
        }
    }
}

static void t_event(void *ctx, tw_fix_session *s, tw_fix_event ev, const char *text)
{
    trader *t = ctx;
    (void)s, (void)text;
    if (ev == TW_FIX_EV_LOGON) {
        tw_fix_wbuf *w = tw_fix_session_begin(&t->fs, "V", tw_clock_now_ns());
        if (!w)
            return;
        tw_fix_put_cstr(w, 262, "bench");
        tw_fix_put_char(w, 263, '1');
        tw_fix_put_u64(w, 264, 1);
        tw_fix_put_char(w, 265, '1');
        tw_fix_put_u64(w, 267, 1);
        tw_fix_put_char(w, 269, '2');
        tw_fix_put_u64(w, 146, 1);
        tw_fix_put_cstr(w, 55, "BENCH");
        if (tw_fix_session_send(&t->fs, tw_clock_now_ns()) != 0)
            t->failed = 1;
    }
    if (ev == TW_FIX_EV_LOGOUT)
        t->logged_out = 1;
}

static int connect_to(uint16_t port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

static void *trader_main(void *arg)
{
    trader *t = arg;
    char name[16];
    snprintf(name, sizeof(name), "BENCH%d", t->id);
    t->fd = connect_to(t->port);
    tw_fix_session_cfg c = {.begin_string = "FIX.4.4", .sender_comp_id = name,
                            .target_comp_id = "VENUE", .initiator = 1, .heart_bt_int_s = 30,
                            .ts_digits = 6, .epoch_offset_ns = tw_clock_epoch_offset_ns(),
                            .stream = {t_write, t_close, t},
                            .app = {.on_msg = t_msg, .on_event = t_event, .ctx = t}};
    if (t->fd < 0 || tw_fix_session_init(&t->fs, &c, NULL) != 0) {
        t->failed = 1;
        return NULL;
    }
    tw_fix_session_connected(&t->fs, tw_clock_now_ns());
    int64_t deadline = tw_clock_now_ns() + 600000000000ll;
    while (t->fs.state != TW_FIX_DISCONNECTED && tw_clock_now_ns() < deadline) {
        struct pollfd pf = {.fd = t->fd, .events = POLLIN};
        if (poll(&pf, 1, 100) <= 0) {
            tw_fix_session_timer(&t->fs, tw_clock_now_ns());
            continue;
        }
        ssize_t k = recv(t->fd, t->rx + t->rx_len, sizeof(t->rx) - t->rx_len, 0);
        if (k <= 0) {
            tw_fix_session_disconnected(&t->fs, tw_clock_now_ns());
            break;
        }
        t->rx_len += (size_t)k;
        size_t used = tw_fix_session_input(&t->fs, t->rx, t->rx_len, tw_clock_now_ns());
        memmove(t->rx, t->rx + used, t->rx_len - used);
        t->rx_len -= used;
    }
    close(t->fd);
    return NULL;
}

/* ---- one run of the venue program -------------------------------------------- */

typedef struct run_result {
    double bars_per_s;   /* the slowest trader's */
    int ok;
} run_result;

static run_result run_venue(const char *self, const char *data, uint64_t bars, int lockstep,
                            int n_traders)
{
    run_result r = {0, 0};
    int pfd[2];
    if (pipe(pfd) != 0)
        return r;
    char bars_s[24], sess_s[8], data_arg[600];
    snprintf(bars_s, sizeof(bars_s), "%llu", (unsigned long long)bars);
    snprintf(sess_s, sizeof(sess_s), "%d", n_traders);
    snprintf(data_arg, sizeof(data_arg), "BENCH=%s", data);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pfd[1], 1);
        close(pfd[0]);
        close(pfd[1]);
        char *argv[] = {(char *)self, (char *)"exchange", (char *)"--listen",
                        (char *)"127.0.0.1:0", (char *)"--data", data_arg, (char *)"--max-bars",
                        bars_s, (char *)"--sessions", sess_s, (char *)"--quiet",
                        lockstep ? (char *)"--lockstep" : (char *)"--rate",
                        lockstep ? NULL : (char *)"0", NULL};
        execv(self, argv);
        _exit(127);
    }
    close(pfd[1]);
    FILE *out = fdopen(pfd[0], "r");
    char line[512];
    uint16_t port = 0;
    if (out && fgets(line, sizeof(line), out)) {
        char *p = strstr(line, "127.0.0.1:");
        if (p)
            port = (uint16_t)atoi(p + 10);
    }
    if (!port) {
        fprintf(stderr, "tickwire bench exchange: the venue did not start\n");
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        if (out)
            fclose(out);
        return r;
    }
    static trader ts[MAX_TRADERS];
    memset(ts, 0, sizeof(ts));
    for (int i = 0; i < n_traders; i++) {
        ts[i].id = i;
        ts[i].port = port;
        pthread_create(&ts[i].th, NULL, trader_main, &ts[i]);
    }
    for (int i = 0; i < n_traders; i++)
        pthread_join(ts[i].th, NULL);
    int st = 0;
    waitpid(pid, &st, 0);
    while (out && fgets(line, sizeof(line), out))
        ;
    if (out)
        fclose(out);
    r.ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    double worst = 1e300;
    for (int i = 0; i < n_traders; i++) {
        trader *t = &ts[i];
        if (t->failed || t->bad || t->next_bar != bars || !t->closed || t->t_closed <= t->t_first) {
            fprintf(stderr,
                    "tickwire bench exchange: trader %d: %llu of %llu bars, %llu out of order, "
                    "closed %d\n",
                    i, (unsigned long long)t->next_bar, (unsigned long long)bars,
                    (unsigned long long)t->bad, t->closed);
            r.ok = 0;
            continue;
        }
        double bps = (double)(bars - 1) * 1e9 / (double)(t->t_closed - t->t_first);
        if (bps < worst)
            worst = bps;
    }
    r.bars_per_s = r.ok ? worst : 0;
    return r;
}

/* ---- yardsticks ------------------------------------------------------------------ */

static int tcp_pair(int *a, int *b)
{
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof(sa);
    int one = 1;
    if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&sa, &sl) != 0)
        return -1;
    *a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*a < 0 || connect(*a, (struct sockaddr *)&sa, sizeof(sa)) != 0)
        return -1;
    *b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
    close(l);
    if (*b < 0)
        return -1;
    setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return 0;
}

typedef struct drain {
    int fd;
    uint64_t bytes;
    size_t echo;  /* > 0: answer every `echo` bytes read with `echo` bytes */
} drain;

static void *drain_main(void *arg)
{
    drain *d = arg;
    static __thread char buf[1 << 16];
    size_t have = 0;
    for (;;) {
        ssize_t k = recv(d->fd, buf, sizeof(buf), 0);
        if (k <= 0)
            return NULL;
        d->bytes += (uint64_t)k;
        if (d->echo) {
            have += (size_t)k;
            while (have >= d->echo) {
                if (send(d->fd, buf, d->echo, MSG_NOSIGNAL) != (ssize_t)d->echo)
                    return NULL;
                have -= d->echo;
            }
        }
    }
}

/* A bare sender: n messages of len bytes over loopback TCP to a reader
 * thread; messages per second. */
static double bare_stream(const char *msg, size_t len, uint64_t n)
{
    int a, b;
    if (tcp_pair(&a, &b) != 0)
        return 0;
    drain d = {.fd = b};
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &d);
    int64_t t0 = tw_clock_now_ns();
    for (uint64_t i = 0; i < n; i++)
        if (send(a, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
            break;
    shutdown(a, SHUT_WR);
    pthread_join(th, NULL);
    int64_t t1 = tw_clock_now_ns();
    close(a);
    close(b);
    return d.bytes == n * len ? (double)n * 1e9 / (double)(t1 - t0) : 0;
}

/* A bare ping-pong of len-byte messages between two threads over
 * loopback TCP: round trips per second. */
static double bare_pingpong(size_t len, uint64_t n)
{
    int a, b;
    if (tcp_pair(&a, &b) != 0)
        return 0;
    drain d = {.fd = b, .echo = len};
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &d);
    char msg[256], in[256];
    memset(msg, 'x', sizeof(msg));
    int64_t t0 = tw_clock_now_ns();
    uint64_t done = 0;
    for (; done < n; done++) {
        if (send(a, msg, len, MSG_NOSIGNAL) != (ssize_t)len)
            break;
        size_t got = 0;
        while (got < len) {
            ssize_t k = recv(a, in + got, len - got, 0);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (got < len)
            break;
    }
    int64_t t1 = tw_clock_now_ns();
    shutdown(a, SHUT_RDWR);
    pthread_join(th, NULL);
    close(a);
    close(b);
    return done == n ? (double)n * 1e9 / (double)(t1 - t0) : 0;
}

/* ---- the venue's own time per bar ------------------------------------------------- */

typedef struct sock_ctx {
    int fd;
    char last[1024]; /* the last message written (a bar's X) */
    size_t last_len;
    int failed;
} sock_ctx;

static int s_write(void *ctx, const char *b, size_t n)
{
    sock_ctx *s = ctx;
    if (n <= sizeof(s->last)) {
        memcpy(s->last, b, n);
        s->last_len = n;
    }
    while (n) {
        ssize_t k = send(s->fd, b, n, MSG_NOSIGNAL);
        if (k <= 0) {
            s->failed = 1;
            return -EPIPE;
        }
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

static void s_close(void *ctx)
{
    ((sock_ctx *)ctx)->failed = 1;
}

/* A client message built by hand (the venue only reads what we send). */
static size_t client_msg(tw_fix_template *t, char *buf, size_t cap, const char *type, uint64_t seq,
                         const char *fields, const char **out)
{
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, t, buf, cap, type, seq, tw_clock_epoch_ns());
    tw_fix_put_raw(&w, fields, strlen(fields));
    size_t len = 0;
    if (tw_fix_build_end(&w, out, &len) != 0)
        return 0;
    return len;
}

/* ns per bar of tw_xchg_poll emitting bars (paced, flat out) to one
 * session whose stream is send() on loopback TCP, and ns per send() of
 * the same X bytes, each the median of `rounds` interleaved rounds of
 * `per_round` bars. */
static int venue_per_bar(const double *px, uint64_t n, int rounds, uint64_t per_round,
                         double *venue_ns, double *send_ns, size_t *x_len)
{
    int a, b;
    if (tcp_pair(&a, &b) != 0)
        return -1;
    drain d = {.fd = b};
    pthread_t th;
    pthread_create(&th, NULL, drain_main, &d);
    char dir[] = "/tmp/tw_bench_xchg_XXXXXX";
    if (!mkdtemp(dir))
        return -1;
    tw_xchg_symbol sym = {"BENCH", px, n};
    tw_xchg_cfg c;
    tw_xchg_cfg_init(&c);
    c.symbols = &sym;
    c.n_symbols = 1;
    c.lockstep = 0;
    c.store_dir = dir;
    c.epoch_offset_ns = tw_clock_epoch_offset_ns();
    tw_xchg *x;
    tw_error err;
    if (tw_xchg_create(&x, &c, &err) != 0) {
        fprintf(stderr, "tickwire bench exchange: %s\n", err.msg);
        return -1;
    }
    sock_ctx sc = {.fd = a};
    tw_fix_stream io = {s_write, s_close, &sc};
    tw_xchg_conn *xc;
    tw_xchg_conn_open(x, &io, NULL, tw_clock_now_ns(), &xc);
    tw_fix_template t;
    tw_fix_template_init(&t, "FIX.4.4", "BENCHC", "VENUE", NULL, NULL, 3, NULL);
    char buf[512];
    const char *m;
    size_t len = client_msg(&t, buf, sizeof(buf), "A", 1, "98=0\x01" "108=30\x01", &m);
    tw_xchg_conn_input(x, xc, m, len, tw_clock_now_ns());
    len = client_msg(&t, buf, sizeof(buf), "V", 2,
                     "262=b\x01" "263=1\x01" "264=1\x01" "265=1\x01" "267=1\x01" "269=2\x01"
                     "146=1\x01" "55=BENCH\x01",
                     &m);
    tw_xchg_conn_input(x, xc, m, len, tw_clock_now_ns());
    len = client_msg(&t, buf, sizeof(buf), "0", 3, "112=open\x01", &m);
    tw_xchg_conn_input(x, xc, m, len, tw_clock_now_ns());
    double *v = calloc((size_t)rounds, sizeof(double)), *s = calloc((size_t)rounds, sizeof(double));
    uint64_t sent = tw_xchg_get_stats(x)->bars;
    int ok = !sc.failed && sent >= 1;
    for (int r = 0; r < rounds && ok; r++) {
        /* The venue: emit per_round bars (PACED_BURST at a time per poll). */
        /* CPU time of this thread: what the venue itself spends, not
         * the time other processes on this shared machine take from it. */
        uint64_t from = sent, goal = sent + per_round;
        int64_t t0 = tw_clock_thread_cpu_ns();
        while (sent < goal && sent < n) {
            tw_xchg_poll(x, tw_clock_now_ns());
            sent = tw_xchg_get_stats(x)->bars;
        }
        int64_t t1 = tw_clock_thread_cpu_ns();
        v[r] = (double)(t1 - t0) / (double)(sent - from);
        /* The same bytes by plain send(). */
        char msg[1024];
        size_t ml = sc.last_len;
        memcpy(msg, sc.last, ml);
        t0 = tw_clock_thread_cpu_ns();
        for (uint64_t i = 0; i < per_round; i++)
            if (send(a, msg, ml, MSG_NOSIGNAL) != (ssize_t)ml)
                ok = 0;
        t1 = tw_clock_thread_cpu_ns();
        s[r] = (double)(t1 - t0) / (double)per_round;
        *x_len = ml;
        ok &= !sc.failed && sent >= goal;
    }
    tw_xchg_conn_closed(x, xc, tw_clock_now_ns());
    tw_xchg_destroy(x);
    shutdown(a, SHUT_RDWR);
    pthread_join(th, NULL);
    close(a);
    close(b);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        ok = 0;
    *venue_ns = tw__median_f64(v, (size_t)rounds);
    *send_ns = tw__median_f64(s, (size_t)rounds);
    free(v);
    free(s);
    return ok ? 0 : -1;
}

int tw__cli_bench_exchange(int argc, char **argv)
{
    uint64_t flat_bars = 200000, lock_bars = 20000;
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            flat_bars = 20000;
            lock_bars = 2000;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("usage: tickwire bench exchange [--quick]\n"
                   "bars/s of `tickwire exchange` to 1 and 4 kernel-TCP sessions, flat out and\n"
                   "in lockstep, and the venue's time per bar next to a plain send()\n");
            return 0;
        } else {
            fprintf(stderr, "tickwire bench exchange: unknown argument %s\n", argv[i]);
            return 2;
        }
    }
    char self[4096];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (sl <= 0) {
        fprintf(stderr, "tickwire bench exchange: cannot find this program\n");
        return 1;
    }
    self[sl] = 0;
    signal(SIGPIPE, SIG_IGN);
    /* One instrument: a random walk (prices of realistic length). */
    uint64_t n = flat_bars > lock_bars ? flat_bars : lock_bars;
    double *px = malloc(n * sizeof(double));
    tw_gen_closes(px, n, 7, 0.01);
    char data[] = "/tmp/tw_bench_xchg_data_XXXXXX";
    int dfd = mkstemp(data);
    if (dfd < 0 || write(dfd, px, n * sizeof(double)) != (ssize_t)(n * sizeof(double))) {
        fprintf(stderr, "tickwire bench exchange: cannot write the dataset\n");
        return 1;
    }
    close(dfd);
    tw_isa best = tw_cpu_has(TW_ISA_AVX512) ? TW_ISA_AVX512 : tw_cpu_has(TW_ISA_AVX2) ? TW_ISA_AVX2 : TW_ISA_SCALAR;
    printf("tickwire bench exchange (%s): kernel TCP on loopback; CPU ISA %s\n",
           quick ? "quick" : "full", tw_isa_name(best));
    fflush(stdout);
    int ok = 1;
    /* Rounds of every run and its yardstick, interleaved, medians: the
     * machine is shared and its speed moves between minutes. */
    enum { MAX_REPS = 5 };
    int reps = quick ? 1 : 3;
    double r_fl1[MAX_REPS], r_fl4[MAX_REPS], r_ls1[MAX_REPS], r_ls4[MAX_REPS];
    double r_bare[MAX_REPS], r_pp[MAX_REPS];
    double venue_ns = 0, send_ns = 0;
    size_t x_len = 0;
    if (venue_per_bar(px, n, quick ? 5 : 11, quick ? 2000 : 10000, &venue_ns, &send_ns,
                      &x_len) != 0) {
        fprintf(stderr, "tickwire bench exchange: the per-bar run failed\n");
        ok = 0;
    }
    char xmsg[1024];
    memset(xmsg, 'x', sizeof(xmsg));
    for (int r = 0; r < reps && ok; r++) {
        run_result fl1 = run_venue(self, data, flat_bars, 0, 1);
        r_bare[r] = bare_stream(xmsg, x_len ? x_len : 120, flat_bars);
        run_result fl4 = run_venue(self, data, flat_bars, 0, 4);
        run_result ls1 = run_venue(self, data, lock_bars, 1, 1);
        r_pp[r] = bare_pingpong(70, lock_bars);
        run_result ls4 = run_venue(self, data, lock_bars, 1, 4);
        if (!(fl1.ok && fl4.ok && ls1.ok && ls4.ok) || r_bare[r] <= 0 || r_pp[r] <= 0) {
            fprintf(stderr, "tickwire bench exchange: round %d: runs ok: flat 1 %d, flat 4 %d, "
                            "lockstep 1 %d, lockstep 4 %d\n",
                    r, fl1.ok, fl4.ok, ls1.ok, ls4.ok);
            ok = 0;
        }
        r_fl1[r] = fl1.bars_per_s;
        r_fl4[r] = fl4.bars_per_s;
        r_ls1[r] = ls1.bars_per_s;
        r_ls4[r] = ls4.bars_per_s;
    }
    double fl1 = tw__median_f64(r_fl1, (size_t)reps), fl4 = tw__median_f64(r_fl4, (size_t)reps), ls1 = tw__median_f64(r_ls1, (size_t)reps),
           ls4 = tw__median_f64(r_ls4, (size_t)reps), bare = tw__median_f64(r_bare, (size_t)reps), pp = tw__median_f64(r_pp, (size_t)reps);
    unlink(data);
    free(px);
    if (!ok) {
        fprintf(stderr, "tickwire bench exchange: a run failed its checks; no figures\n");
        return 1;
    }
    printf("\nmedians of %d interleaved round(s)\n", reps);
    printf("| run | sessions | bars/s (slowest session) | yardstick | ratio |\n");
    printf("|---|---:|---:|---|---:|\n");
    printf("| flat out (--rate 0) | 1 | %.0f | bare send() of the same %zu-byte X, %.0f msg/s | %.2fx |\n",
           fl1, x_len, bare, fl1 / bare);
    printf("| flat out (--rate 0) | 4 | %.0f | the same, 1 reader | %.2fx |\n", fl4, fl4 / bare);
    printf("| lockstep (barrier round trips/s) | 1 | %.0f | bare 70-byte TCP ping-pong, %.0f/s | %.2fx |\n",
           ls1, pp, ls1 / pp);
    printf("| lockstep (barrier round trips/s) | 4 | %.0f | the same, one peer | %.2fx |\n", ls4,
           ls4 / pp);
    printf("\nvenue per bar, CPU time (format + store + build + send(), 1 session, %zu-byte X): "
           "%.0f ns; plain send() of the same bytes: %.0f ns; %.2fx\n",
           x_len, venue_ns, send_ns, venue_ns / send_ns);
    printf("goal (ours; system.md sets none for the venue): per-bar time <= 2x a plain send() "
           "-> %s\n",
           venue_ns <= 2 * send_ns ? "met" : "NOT met");
    return 0;
}
