/* The attach handshake with strategy processes (this program, spawned):
 *
 *  flow       a strategy attaches, takes every event and sends its intents;
 *             a second strategy that connects meanwhile is refused;
 *  hangup     a strategy that closes its socket but lives on is killed once
 *             the exit grace has passed (the gateway's clock is the test's)
 *             and replaced; the rings are not reset while it could write;
 *             one that exits after its last event is not killed;
 *  heartbeat  a strategy that attaches and then stops (SIGSTOP) is killed
 *             once its beat has stood still for the timeout (the gateway's
 *             clock is the test's: no timing), then a new one attaches;
 *  hostile    connections that send garbage, another version, someone
 *             else's pid, nothing, or hang up, are dropped and counted;
 *             the gateway goes on;
 *  gateway    a fake gateway (forked) answers the strategy's HELLO with
 *             REFUSE, garbage, no fds, an unsealed or wrongly sized or
 *             empty segment, the wrong generation, a journal fd that is no
 *             journal, or nothing: each refused with its error. */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "attach_test_util.h"
#include "tickwire/clock.h"
#include "tw_check.h"

static char dir[256], sock[300], jpath[300];

/* ---- children ---------------------------------------------------------------- */

static int echo_loop(tw_attach_st *s);

/* echo SOCK N: every event's intent (the test core), until STOP. */
static int child_echo(char **argv)
{
    tw_attach_st s;
    tw_error err = {0};
    for (long tries = 0;; tries++) {
        int rc = tw_attach_st_connect(&s, argv[0], 60000, &err);
        if (rc == 0)
            break;
        if ((rc != -ECONNREFUSED && rc != -ENOENT) || tries > 1000000) {
            fprintf(stderr, "echo: %s\n", err.msg);
            return 2;
        }
        sched_yield();
    }
    int rc = echo_loop(&s);
    tw_attach_st_close(&s);
    return rc;
}

static int echo_loop(tw_attach_st *s)
{
    tw_error err = {0};
    at_core core = {0};
    uint64_t beat = 0;
    for (;;) {
        tw_journal_rec recs[16];
        int k = tw_attach_st_next_burst(s, recs, 16, &err);
        if (k < 0) {
            fprintf(stderr, "echo: %s\n", err.msg);
            return 2;
        }
        for (int i = 0; i < k; i++) {
            uint32_t kind = tw_journal_rec_kind(&recs[i]);
            if (kind == AT_KIND_STOP)
                return 0;
            if (kind != TW_JOURNAL_EV)
                continue;
            at_ev e;
            at_out o;
            memcpy(&e, recs[i].payload, sizeof(e));
            if (!at_ev_ok(&e))
                return 4;
            if (!at_core_step(&core, &e, s->n_cores, &o))
                continue;
            while (tw_ring_enqueue_burst_sp(tw_attach_st_out_ring(s, (uint32_t)o.core), &o, 1) == 0) {
                if (tw_attach_st_check_gateway(s, 0, 0) != 0)
                    return 3;
                tw_attach_st_beat(s, ++beat);
                sched_yield();
            }
            (void)tw_attach_st_ring_gw(s, (uint32_t)o.core);
        }
        tw_attach_st_beat(s, ++beat);
        if (k > 0)
            tw_attach_st_done(s); /* the burst's intents are committed */
        if (k == 0) {
            if (tw_attach_st_check_gateway(s, 0, 0) != 0)
                return 3;
            /* Asleep until the gateway's next put (bounded: 1 ms). */
            int w = tw_attach_st_wait(s, 1000000);
            if (w != 0 && w != -ETIMEDOUT && w != -EINTR)
                return 6;
        }
    }
}

/* probe SOCK: one connect, which must be refused (exit 0), else 1. */
static int child_probe(char **argv)
{
    tw_attach_st s;
    tw_error err = {0};
    int rc = tw_attach_st_connect(&s, argv[0], 60000, &err);
    if (rc == 0)
        tw_attach_st_close(&s);
    if (rc == -ECONNREFUSED && strstr(err.msg, "another strategy"))
        return 0;
    fprintf(stderr, "probe: %d %s\n", rc, err.msg);
    return 1;
}

/* stopper SOCK: attaches, then stops itself (never beats).  hangup SOCK:
 * attaches, closes its socket and waits for a signal. */
static int child_stall(char **argv, int hangup)
{
    tw_attach_st s;
    tw_error err = {0};
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    if (tw_attach_st_connect(&s, argv[0], 60000, &err) != 0) {
        fprintf(stderr, "stall: %s\n", err.msg);
        return 2;
    }
    if (hangup) {
        /* The gateway tells us (SIGUSR1) once it has seen us attached. */
        int sig;
        sigwait(&usr1, &sig);
        close(s.sock);
        for (;;)
            pause();
    }
    raise(SIGSTOP);
    return 5; /* only if someone continues us */
}

/* ---- the gateway --------------------------------------------------------------- */

typedef struct gw_world {
    tw_journal j;
    tw_attach_gw g;
    int64_t now;
    uint64_t next_idx, n;
    int stop_put;
    uint64_t intents[2], wrong;
    at_core expect;
    uint64_t expect_intents;
    uint64_t gw_waits; /* turns a core slept on its doorbell (the strategy had work) */
    uint64_t gw_idle;  /* turns a core found the strategy with nothing in flight */
} gw_world;

static int gw_open(gw_world *w, int64_t beat_timeout_ns)
{
    memset(w, 0, sizeof(*w));
    unlink(jpath);
    tw_error err = {0};
    tw_journal_cfg jc = {.path = jpath};
    if (tw_journal_open(&w->j, &jc, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    tw_attach_gw_cfg gc = {.sock_path = sock, .n_cores = 2, .in_count = 32, .out_count = 8,
                           .journal = &w->j, .beat_timeout_ns = beat_timeout_ns};
    if (tw_attach_gw_open(&w->g, &gc, &err) != 0) {
        fprintf(stderr, "%s\n", err.msg);
        tw_journal_close(&w->j);
        return -1;
    }
    w->now = 1000000000000;
    w->next_idx = 1;
    return 0;
}

static void gw_close(gw_world *w)
{
    tw_attach_gw_close(&w->g);
    tw_journal_close(&w->j);
}

/* One turn of the one-thread gateway; feeds events while produce. */
static int gw_turn(gw_world *w, int produce)
{
    tw_error err = {0};
    int ev = tw_attach_gw_poll(&w->g, w->now, &err);
    CHECKF(ev >= 0, "%s", err.msg);
    for (uint32_t c = 0; c < 2; c++) {
        int st = tw_attach_gw_core_sync(&w->g, c);
        if (st == TW_ATTACH_CORE_DOWN)
            continue;
        at_out o;
        unsigned got = 0;
        while (tw_ring_dequeue_burst_sc(tw_attach_gw_out_ring(&w->g, c), &o, 1) == 1) {
            w->intents[c]++;
            got++;
            if (!at_out_ok(&o, 2) || o.core != c)
                w->wrong++;
            CHECK_EQ(tw_attach_gw_put(&w->g, c, TW_JOURNAL_OUT, &o, NULL), 0);
        }
        /* Nothing to send and nothing to take: the core sleeps on its
         * doorbell until the strategy commits (bounded: 100 us). */
        if (!produce && !got && st == TW_ATTACH_CORE_LIVE) {
            int r = tw_attach_gw_wait(&w->g, c, 100000);
            CHECK(r == 0 || r == 1 || r == -ETIMEDOUT || r == -EINTR);
            w->gw_waits += r != 1;
            w->gw_idle += r == 1;
        }
    }
    if (produce && w->next_idx <= w->n) {
        at_ev e;
        at_out o;
        at_ev_make(&e, w->next_idx);
        if (at_core_step(&w->expect, &e, 2, &o))
            w->expect_intents++;
        CHECK_EQ(tw_attach_gw_put(&w->g, (uint32_t)(w->next_idx % 2), TW_JOURNAL_EV, &e, NULL), 0);
        w->next_idx++;
    } else if (produce && !w->stop_put) {
        at_ev e;
        at_ev_make(&e, 0);
        CHECK_EQ(tw_attach_gw_put(&w->g, 0, AT_KIND_STOP, &e, NULL), 0);
        w->stop_put = 1;
    }
    sched_yield();
    return ev;
}

static pid_t spawn1(const char *mode)
{
    char *args[] = {"attach_procs", (char *)mode, sock, NULL};
    return at_spawn(args);
}

/* Turns until ev comes (or a bound passes). */
static int until(gw_world *w, int ev, int produce)
{
    for (long i = 0; i < 50000000; i++)
        if (gw_turn(w, produce) == ev)
            return 1;
    return 0;
}

static void test_flow(void)
{
    gw_world w;
    REQUIRE(gw_open(&w, 0) == 0);
    w.n = 3000;
    /* Events flow before the strategy is there: journal only. */
    for (int i = 0; i < 100; i++)
        gw_turn(&w, 1);
    pid_t echo = spawn1("echo");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 0));
    CHECK_EQ(w.g.state, TW_ATTACH_GW_LIVE);
    CHECK(w.g.hdr->st_pid == (uint32_t)echo);
    /* No STOP yet, so the first strategy stays while a second one tries. */
    pid_t probe = spawn1("probe");
    int st = 0;
    for (long i = 0; i < 50000000; i++) {
        gw_turn(&w, 0);
        if (waitpid(probe, &st, WNOHANG) == probe)
            break;
    }
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "probe status 0x%x", st);
    CHECK(w.g.refused >= 1);
    /* The strategy says when it has finished what it was given
     * (tw_attach_st_done): once it has caught up, a core's wait finds
     * nothing in flight and does not sleep. */
    for (long i = 0; i < 50000000 && w.gw_idle == 0; i++)
        gw_turn(&w, 0);
    CHECK(w.gw_idle > 0);
    CHECK(until(&w, TW_ATTACH_EV_DETACHED, 1)); /* the echo child ends at STOP */
    CHECKF(waitpid(echo, &st, 0) == echo && WIFEXITED(st) && WEXITSTATUS(st) == 0, "echo status 0x%x", st);
    CHECK(until(&w, TW_ATTACH_EV_WAITING, 0));
    CHECK_EQ(w.intents[0] + w.intents[1], w.expect_intents);
    CHECK(w.intents[0] > 0 && w.intents[1] > 0);
    CHECK_EQ(w.wrong, 0);
    CHECK_EQ(w.g.attaches, 1);
    CHECK_EQ(w.g.exits, 1); /* it hung up and exited by itself: not killed */
    CHECK(w.g.core[0].in_dropped > 0); /* the first events, before the attach */
    CHECK_EQ(w.g.core[0].resets, 1);
    gw_close(&w);
}

static void test_hangup(void)
{
    gw_world w;
    REQUIRE(gw_open(&w, 0) == 0);
    pid_t v = spawn1("hangup");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 0));
    kill(v, SIGUSR1); /* it closes its socket and lives on */
    /* The gateway's clock moves 10 ms a turn: past the 1 s grace a
     * strategy that hung up has to be gone, it is killed. */
    int ev = 0, turns = 0;
    while (ev != TW_ATTACH_EV_DETACHED && turns < 1000000) {
        w.now += 10 * 1000000ll;
        ev = gw_turn(&w, 0);
        turns++;
    }
    CHECK_EQ(ev, TW_ATTACH_EV_DETACHED);
    CHECKF(turns > 100, "killed after %d turns", turns);
    int st = 0;
    CHECK(waitpid(v, &st, 0) == v && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    CHECK_EQ(w.g.hangups, 1);
    CHECK_EQ(w.g.exits, 0);
    CHECK(until(&w, TW_ATTACH_EV_WAITING, 0));
    /* A new strategy attaches to the reset rings and runs to the end. */
    w.n = 500;
    pid_t echo = spawn1("echo");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 1));
    CHECK_EQ(w.g.hdr->generation, 2);
    CHECK(until(&w, TW_ATTACH_EV_DETACHED, 1));
    CHECKF(waitpid(echo, &st, 0) == echo && WIFEXITED(st) && WEXITSTATUS(st) == 0, "echo status 0x%x", st);
    CHECK(until(&w, TW_ATTACH_EV_WAITING, 0));
    CHECK_EQ(w.intents[0] + w.intents[1], w.expect_intents);
    gw_close(&w);
}

static void test_heartbeat(void)
{
    gw_world w;
    const int64_t timeout = 50 * 1000000ll;
    REQUIRE(gw_open(&w, timeout) == 0);
    pid_t s = spawn1("stopper");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 0));
    /* The gateway's clock moves 1 ms a turn from here: the beat is still
     * for 50 of them, then the strategy is killed. */
    int turns = 0, ev = 0;
    while (ev != TW_ATTACH_EV_DETACHED && turns < 100000) {
        w.now += 1000000;
        ev = gw_turn(&w, 0);
        turns++;
    }
    CHECK_EQ(ev, TW_ATTACH_EV_DETACHED);
    CHECKF(turns >= 50, "killed after %d turns", turns);
    CHECK_EQ(w.g.beat_timeouts, 1);
    int st = 0;
    CHECK(waitpid(s, &st, 0) == s && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    CHECK(until(&w, TW_ATTACH_EV_WAITING, 0));
    /* The clock stands still again: a live strategy is never timed out. */
    w.n = 300;
    pid_t echo = spawn1("echo");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 1));
    CHECK(until(&w, TW_ATTACH_EV_DETACHED, 1));
    CHECKF(waitpid(echo, &st, 0) == echo && WIFEXITED(st) && WEXITSTATUS(st) == 0, "echo status 0x%x", st);
    CHECK_EQ(w.g.beat_timeouts, 1);
    gw_close(&w);
}

static int raw_connect(void)
{
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t l = strlen(sock);
    if (l >= sizeof(a.sun_path))
        l = sizeof(a.sun_path) - 1;
    memcpy(a.sun_path, sock, l);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void test_hostile(void)
{
    gw_world w;
    REQUIRE(gw_open(&w, 0) == 0);
    struct {
        const char *name;
        int kind;
        const char *why;
    } t[] = {
        {"garbage", 0, "not a HELLO"},
        {"another version", 1, "version 7"},
        {"someone else's pid", 2, "the socket says"},
        {"a WELCOME instead", 3, "not a HELLO"},
        {"hangs up at once", 4, "closed before HELLO"},
        {"says nothing", 5, "no HELLO within"},
    };
    for (size_t i = 0; i < TW_ARRAY_SIZE(t); i++) {
        uint64_t bad0 = w.g.bad_hello;
        int fd = raw_connect();
        REQUIRE(fd >= 0);
        tw_attach_msg m;
        memset(&m, 0, sizeof(m));
        m.magic = TW_ATTACH_MAGIC;
        m.version = TW_ATTACH_VERSION;
        m.type = TW_ATTACH_MSG_HELLO;
        m.pid = (uint32_t)getpid();
        switch (t[i].kind) {
        case 0: CHECK(send(fd, "0123456789", 10, 0) == 10); break;
        case 1: m.version = 7; break;
        case 2: m.pid += 1; break;
        case 3: m.type = TW_ATTACH_MSG_WELCOME; break;
        case 4: close(fd); fd = -1; break;
        default: break;
        }
        if (t[i].kind >= 1 && t[i].kind <= 3)
            CHECK(send(fd, &m, sizeof(m), 0) == (ssize_t)sizeof(m));
        for (int k = 0; k < 100000 && w.g.bad_hello == bad0; k++) {
            if (t[i].kind == 5)
                w.now += 10 * 1000000ll; /* past the 1 s HELLO timeout */
            gw_turn(&w, 0);
        }
        CHECKF(w.g.bad_hello == bad0 + 1 && strstr(w.g.last_err.msg, t[i].why), "%s: %s", t[i].name,
               w.g.last_err.msg);
        CHECK_EQ(w.g.state, TW_ATTACH_GW_WAITING);
        if (fd >= 0) {
            /* The gateway hung up on it. */
            char b[64];
            CHECK(recv(fd, b, sizeof(b), 0) == 0);
            close(fd);
        }
    }
    /* Still a working gateway. */
    w.n = 200;
    pid_t echo = spawn1("echo");
    CHECK(until(&w, TW_ATTACH_EV_ATTACHED, 1));
    CHECK(until(&w, TW_ATTACH_EV_DETACHED, 1));
    int st = 0;
    CHECKF(waitpid(echo, &st, 0) == echo && WIFEXITED(st) && WEXITSTATUS(st) == 0, "echo status 0x%x", st);
    CHECK_EQ(w.intents[0] + w.intents[1], w.expect_intents);
    gw_close(&w);
}

/* ---- a fake gateway ---------------------------------------------------------- */

enum { FG_REFUSE, FG_CLOSE, FG_GARBAGE, FG_NO_FDS, FG_UNSEALED, FG_SIZE, FG_EMPTY, FG_GEN,
       FG_NOT_JOURNAL, FG_SILENT, FG_COUNT };

static void fake_gateway(const char *path, int listen_fd)
{
    /* A real segment and journal to hand out, from a real gateway. */
    char jp[400], sp[400];
    snprintf(jp, sizeof(jp), "%s/fake-journal", dir);
    snprintf(sp, sizeof(sp), "%s/fake-real.sock", dir);
    tw_journal j;
    tw_attach_gw g;
    tw_error err = {0};
    tw_journal_cfg jc = {.path = jp};
    tw_attach_gw_cfg gc = {.sock_path = sp, .n_cores = 1, .in_count = 8, .out_count = 8,
                           .journal = &j};
    if (tw_journal_open(&j, &jc, &err) != 0 || tw_attach_gw_open(&g, &gc, &err) != 0)
        _exit(10);
    for (int c = 0; c < FG_COUNT; c++) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0)
            _exit(11);
        tw_attach_msg m;
        if (recv(fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m))
            _exit(12);
        tw_attach_msg w;
        memset(&w, 0, sizeof(w));
        w.magic = TW_ATTACH_MAGIC;
        w.version = TW_ATTACH_VERSION;
        w.type = TW_ATTACH_MSG_WELCOME;
        w.generation = 1;
        w.seg_bytes = g.seg_bytes;
        w.n_fds = 2;
        int fds[2] = {g.memfd, g.journal_ro_fd}, nf = 2;
        int mfd = -1;
        switch (c) {
        case FG_REFUSE: w.type = TW_ATTACH_MSG_REFUSE; nf = 0; break;
        case FG_CLOSE: close(fd); continue;
        case FG_GARBAGE: (void)send(fd, "garbage!", 8, 0); close(fd); continue;
        case FG_NO_FDS: nf = 0; break;
        case FG_UNSEALED:
            mfd = memfd_create("fake", 0);
            if (ftruncate(mfd, (off_t)g.seg_bytes) != 0)
                _exit(13);
            fds[0] = mfd;
            break;
        case FG_SIZE: w.seg_bytes += 4096; break;
        case FG_EMPTY:
            mfd = memfd_create("fake", MFD_ALLOW_SEALING);
            if (ftruncate(mfd, (off_t)g.seg_bytes) != 0 ||
                fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0)
                _exit(13);
            fds[0] = mfd;
            break;
        case FG_GEN: w.generation = 99; break;
        case FG_NOT_JOURNAL: fds[1] = g.memfd; break;
        case FG_SILENT: {
            char b;
            (void)recv(fd, &b, 1, 0); /* until the strategy gives up and hangs up */
            close(fd);
            continue;
        }
        }
        union {
            char buf[CMSG_SPACE(2 * sizeof(int))];
            struct cmsghdr align;
        } cm;
        struct iovec v = {&w, sizeof(w)};
        struct msghdr h = {.msg_iov = &v, .msg_iovlen = 1};
        if (nf) {
            memset(&cm, 0, sizeof(cm));
            h.msg_control = cm.buf;
            h.msg_controllen = CMSG_SPACE(nf * sizeof(int));
            struct cmsghdr *ch = CMSG_FIRSTHDR(&h);
            ch->cmsg_level = SOL_SOCKET;
            ch->cmsg_type = SCM_RIGHTS;
            ch->cmsg_len = CMSG_LEN(nf * sizeof(int));
            memcpy(CMSG_DATA(ch), fds, nf * sizeof(int));
        }
        (void)sendmsg(fd, &h, MSG_NOSIGNAL);
        /* Wait for the strategy to hang up (or say READY, which it must not). */
        char b[64];
        ssize_t k = recv(fd, b, sizeof(b), 0);
        if (k > 0)
            _exit(20 + c);
        close(fd);
        if (mfd >= 0)
            close(mfd);
    }
    tw_attach_gw_close(&g);
    tw_journal_close(&j);
    (void)path;
    _exit(0);
}

static void test_fake_gateway(void)
{
    char fs[400];
    snprintf(fs, sizeof(fs), "%s/fake.sock", dir);
    int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    REQUIRE(strlen(fs) < sizeof(a.sun_path));
    memcpy(a.sun_path, fs, strlen(fs) + 1);
    REQUIRE(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof(a)) == 0 && listen(lfd, 4) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0)
        fake_gateway(fs, lfd);
    close(lfd);
    struct {
        int code;
        const char *what;
    } want[FG_COUNT] = {
        [FG_REFUSE] = {-ECONNREFUSED, "another strategy"},
        [FG_CLOSE] = {-ECONNRESET, "closed"},
        [FG_GARBAGE] = {-EPROTO, "not a message of ours"},
        [FG_NO_FDS] = {-EPROTO, "2 fds"},
        [FG_UNSEALED] = {-EPROTO, "not sealed"},
        [FG_SIZE] = {-EBADMSG, "WELCOME says"},
        [FG_EMPTY] = {-EPROTO, "bad magic"},
        [FG_GEN] = {-EBADMSG, "generation"},
        [FG_NOT_JOURNAL] = {-TW_EFORMAT, "not a journal"},
        [FG_SILENT] = {-ETIMEDOUT, "no WELCOME"},
    };
    for (int c = 0; c < FG_COUNT; c++) {
        tw_attach_st s;
        tw_error err = {0};
        int rc = tw_attach_st_connect(&s, fs, c == FG_SILENT ? 200 : 60000, &err);
        CHECKF(rc == want[c].code && strstr(err.msg, want[c].what), "case %d: %d (want %d): %s", c,
               rc, want[c].code, err.msg);
        if (rc == 0)
            tw_attach_st_close(&s);
        CHECK_EQ(s.sock, -1);
        CHECK(s.seg == NULL);
    }
    int st = 0;
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fake gateway status 0x%x", st);
    /* Nothing listening at all. */
    tw_attach_st s;
    tw_error err = {0};
    CHECK(tw_attach_st_connect(&s, fs, 100, &err) < 0);
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "echo"))
        return child_echo(argv + 2);
    if (argc > 2 && !strcmp(argv[1], "probe"))
        return child_probe(argv + 2);
    if (argc > 2 && !strcmp(argv[1], "stopper"))
        return child_stall(argv + 2, 0);
    if (argc > 2 && !strcmp(argv[1], "hangup"))
        return child_stall(argv + 2, 1);
    signal(SIGPIPE, SIG_IGN);
    ju_mkdir(dir, sizeof(dir), "attach-procs");
    snprintf(sock, sizeof(sock), "%s/gw.sock", dir);
    snprintf(jpath, sizeof(jpath), "%s/journal", dir);
    setvbuf(stdout, NULL, _IONBF, 0);
    printf("flow\n");
    test_flow();
    printf("hangup\n");
    test_hangup();
    printf("heartbeat\n");
    test_heartbeat();
    printf("hostile\n");
    test_hostile();
    printf("fake gateway\n");
    test_fake_gateway();
    ju_rmdir(dir);
    return tw_check_done("attach_procs");
}
