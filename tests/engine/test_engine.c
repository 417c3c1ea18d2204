/* Engine server and C client against a real `tickwire serve` process:
 * every transport gives the kernel's exact results, every kind of bad
 * input gets its error frame, and after each the server still answers a
 * valid request on another connection.  argv[1] is the tickwire program. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tw_check.h"
#include "tickwire/client.h"
#include "tickwire/kernel.h"

static const char *g_bin;
static char g_sock[108];
static char g_addr_unix[128], g_addr_shm[128], g_addr_tcp[64], g_addr_spawn[512];
static pid_t g_pid;

#define CHECKRC(rc, err)                                                                  \
    do {                                                                                  \
        if ((rc) != 0) {                                                                  \
            fprintf(stderr, "%s:%d: rc %d: %s\n", __FILE__, __LINE__, (int)(rc), (err).msg); \
            tw_check_failures++;                                                          \
            return;                                                                       \
        }                                                                                 \
    } while (0)

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- server process ----------------------------------------------------- */

/* Never leave a server behind, whatever happens to the test. */
static void kill_server(void)
{
    if (g_pid > 0) {
        kill(g_pid, SIGKILL);
        waitpid(g_pid, NULL, 0);
        g_pid = 0;
    }
    unlink(g_sock);
}

static void start_server(void)
{
    snprintf(g_sock, sizeof(g_sock), "/tmp/tw-engine-test-%d.sock", (int)getpid());
    int p[2];
    TW_VERIFY(pipe(p) == 0);
    g_pid = fork();
    TW_VERIFY(g_pid >= 0);
    if (g_pid == 0) {
        dup2(p[1], 2);
        close(p[0]);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 1);
        /* If the test dies (a crash, a ctest timeout), so does its server. */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        execl(g_bin, g_bin, "serve", "--unix", g_sock, "--tcp", "0", "--workers", "2",
              "--max-frame-bytes", "16777216", "--max-bars", "1000000", "--max-combos", "10000",
              "--max-datasets", "4", "--max-conns", "100", (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    /* The server prints its listeners on stderr once bound. */
    FILE *f = fdopen(p[0], "r");
    char line[256];
    int port = -1;
    while (port < 0 && fgets(line, sizeof(line), f)) {
        char *t = strstr(line, "tcp:127.0.0.1:");
        if (t)
            port = atoi(t + 14);
    }
    TW_VERIFY(port > 0);
    /* Keep draining the server's stderr in the background is not needed:
     * it logs only at start unless --verbose. */
    snprintf(g_addr_unix, sizeof(g_addr_unix), "unix:%s", g_sock);
    snprintf(g_addr_shm, sizeof(g_addr_shm), "shm:%s", g_sock);
    snprintf(g_addr_tcp, sizeof(g_addr_tcp), "tcp:127.0.0.1:%d", port);
    snprintf(g_addr_spawn, sizeof(g_addr_spawn), "spawn:%s", g_bin);
}

static int raw_connect(void)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, g_sock);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    TW_VERIFY(fd >= 0);
    TW_VERIFY(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    struct timeval tv = {20, 0}; /* a hung server fails the test instead of hanging it */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

static int send_all(int fd, const void *p, size_t n)
{
    size_t o = 0;
    while (o < n) {
        ssize_t k = send(fd, (const char *)p + o, n - o, MSG_NOSIGNAL);
        if (k <= 0)
            return -1;
        o += (size_t)k;
    }
    return 0;
}

static int recv_all(int fd, void *p, size_t n)
{
    size_t o = 0;
    while (o < n) {
        ssize_t k = recv(fd, (char *)p + o, n - o, 0);
        if (k <= 0)
            return -1;
        o += (size_t)k;
    }
    return 0;
}

/* Reads one reply; returns the error code (0 for a normal reply). */
static int read_reply(int fd, uint8_t *body, size_t cap, size_t *len)
{
    uint32_t l;
    if (recv_all(fd, &l, 4))
        return -1;
    size_t bl = l & TW_WIRE_LEN_MASK;
    if (bl > cap || recv_all(fd, body, bl))
        return -1;
    *len = bl;
    if (l & TW_WIRE_ERROR_BIT) {
        uint16_t code;
        memcpy(&code, body, 2);
        return code;
    }
    return 0;
}

/* The liveness probe run after every bad input: a fresh connection gets a
 * correct echo. */
static void alive(const char *after)
{
    tw_client *c;
    tw_error err = {0};
    int rc = tw_client_connect(&c, g_addr_unix, &err);
    double in[3] = {1.5, 2.5, 3.5}, out[3] = {0};
    if (rc == 0)
        rc = tw_client_echo(c, in, 3, out, &err);
    tw_client_close(c);
    if (rc || memcmp(in, out, sizeof(in))) {
        fprintf(stderr, "server not answering after %s: %s\n", after, err.msg);
        tw_check_failures++;
    }
}

static uint8_t *frame_sweep(uint8_t op, uint32_t n_bars, uint32_t n_combos, const double *c,
                            const int64_t *combos, size_t *len)
{
    size_t body = 9 + 8ull * n_bars + 48ull * n_combos;
    uint8_t *f = malloc(4 + body);
    uint32_t bl = (uint32_t)body;
    memcpy(f, &bl, 4);
    f[4] = op;
    memcpy(f + 5, &n_bars, 4);
    memcpy(f + 9, &n_combos, 4);
    if (c)
        memcpy(f + 13, c, 8ull * n_bars);
    else
        for (uint32_t i = 0; i < n_bars; i++) {
            double v = 100.0 + i;
            memcpy(f + 13 + 8ull * i, &v, 8);
        }
    if (combos)
        memcpy(f + 13 + 8ull * n_bars, combos, 48ull * n_combos);
    *len = 4 + body;
    return f;
}

/* A counter of INFO's "ops" (e.g. "sweep", "sweep_loaded"), read on a
 * fresh connection. */
static uint64_t info_op(const char *op)
{
    tw_client *c;
    tw_error err = {0};
    char info[8192], key[64];
    TW_VERIFY(tw_client_connect(&c, g_addr_unix, &err) == 0);
    TW_VERIFY(tw_client_info(c, info, sizeof(info), &err) > 0);
    tw_client_close(c);
    snprintf(key, sizeof(key), "\"%s\":", op);
    const char *p = strstr(info, "\"ops\":{");
    TW_VERIFY(p);
    p = strstr(p, key);
    TW_VERIFY(p);
    return strtoull(p + strlen(key), NULL, 10);
}

static uint64_t info_sweeps(void) { return info_op("sweep"); }

/* ---- correctness over every transport ----------------------------------- */

enum { NB = 3000, NC = 5 };
static double g_close[NB];
static int64_t g_combos[NC * 6];
static double g_pnl[NC];
static int64_t g_trades[NC];

static void test_transport(const char *addr)
{
    tw_client *c;
    tw_error err = {0};
    int rc = tw_client_connect(&c, addr, &err);
    CHECKRC(rc, err);
    double one = 42.0, back = 0;
    rc = tw_client_echo(c, &one, 1, &back, &err);
    CHECKRC(rc, err);
    REQUIRE(back == 42.0);
    static double big[200000], bigb[200000];
    for (int i = 0; i < 200000; i++)
        big[i] = i * 0.5 + 1;
    rc = tw_client_echo(c, big, 200000, bigb, &err);
    CHECKRC(rc, err);
    REQUIRE(!memcmp(big, bigb, sizeof(big)));
    rc = tw_client_echo(c, NULL, 0, NULL, &err);
    CHECKRC(rc, err);
    /* Sizes that make the shm rings wrap (with padding) several times. */
    for (int k = 0; k < 12; k++) {
        size_t m = k % 3 == 0 ? 3 : 120000 + 7000 * (size_t)k;
        big[0] = k;
        rc = tw_client_echo(c, big, m, bigb, &err);
        CHECKRC(rc, err);
        REQUIRE(!memcmp(big, bigb, 8 * m));
    }

    double pnl[NC];
    int64_t tr[NC];
    rc = tw_client_sweep(c, g_close, NB, g_combos, NC, pnl, tr, &err);
    CHECKRC(rc, err);
    REQUIRE(!memcmp(pnl, g_pnl, sizeof(pnl)) && !memcmp(tr, g_trades, sizeof(tr)));

    uint64_t id;
    rc = tw_client_load(c, g_close, NB, &id, &err);
    CHECKRC(rc, err);
    memset(pnl, 0, sizeof(pnl));
    rc = tw_client_sweep_loaded(c, id, g_combos, NC, pnl, tr, &err);
    CHECKRC(rc, err);
    REQUIRE(!memcmp(pnl, g_pnl, sizeof(pnl)) && !memcmp(tr, g_trades, sizeof(tr)));
    rc = tw_client_drop(c, id, &err);
    CHECKRC(rc, err);
    rc = tw_client_sweep_loaded(c, id, g_combos, NC, pnl, tr, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_NO_DATASET);
    REQUIRE(strstr(err.msg, "unknown dataset"));

    if (strncmp(addr, "unix:", 5) == 0 || strncmp(addr, "shm:", 4) == 0) {
        rc = tw_client_load_memfd(c, g_close, NB, &id, &err);
        CHECKRC(rc, err);
        memset(pnl, 0, sizeof(pnl));
        rc = tw_client_sweep_loaded(c, id, g_combos, NC, pnl, tr, &err);
        CHECKRC(rc, err);
        REQUIRE(!memcmp(pnl, g_pnl, sizeof(pnl)) && !memcmp(tr, g_trades, sizeof(tr)));
        rc = tw_client_drop(c, id, &err);
        CHECKRC(rc, err);
    }

    /* LOAD checks prices once: NaN is a valid price, 0 and +inf are not
     * (named by index), and the connection stays usable. */
    double pr[1500];
    for (int i = 0; i < 1500; i++)
        pr[i] = 100 + i;
    pr[7] = NAN;
    rc = tw_client_load(c, pr, 1500, &id, &err);
    CHECKRC(rc, err);
    rc = tw_client_drop(c, id, &err);
    CHECKRC(rc, err);
    pr[1300] = 0;
    rc = tw_client_load(c, pr, 1500, &id, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "close[1300]"));
    pr[1300] = 1;
    pr[1499] = INFINITY;
    rc = tw_client_load(c, pr, 1500, &id, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "close[1499]"));

    /* A bad window is BAD_PARAMS and the connection stays usable. */
    int64_t bad[6] = {1, 2, 3, 4, 5, 0};
    rc = tw_client_sweep(c, g_close, NB, bad, 1, pnl, tr, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS);
    rc = tw_client_echo(c, &one, 1, &back, &err);
    CHECKRC(rc, err);

    char info[8192];
    rc = tw_client_info(c, info, sizeof(info), &err);
    REQUIRE(rc > 0);
    REQUIRE(strstr(info, "\"counters\"") && strstr(info, "\"max_bars\":"));
    /* The spawned engine runs with default limits; the others with ours. */
    REQUIRE(strncmp(addr, "spawn:", 6) == 0 || strstr(info, "\"max_bars\":1000000"));
    tw_client_close(c);
    printf("transport %-6s ok\n", addr);
}

/* ---- bad input ---------------------------------------------------------- */

static void expect_error(const void *frame, size_t len, int code, int closes, const char *what)
{
    int fd = raw_connect();
    uint8_t body[1024];
    size_t bl;
    if (send_all(fd, frame, len)) {
        fprintf(stderr, "%s: send failed\n", what);
        tw_check_failures++;
    }
    int got = read_reply(fd, body, sizeof(body), &bl);
    if (got != code) {
        fprintf(stderr, "%s: wanted error %d, got %d\n", what, code, got);
        tw_check_failures++;
    } else {
        printf("%-28s -> %s: %.*s\n", what, tw_wire_strerror((unsigned)code), (int)bl - 2,
               body + 2);
    }
    uint8_t x;
    if (closes) {
        if (recv(fd, &x, 1, 0) != 0) {
            fprintf(stderr, "%s: connection not closed after BAD_FRAME\n", what);
            tw_check_failures++;
        }
    } else {
        /* Still usable: an INFO on the same connection. */
        uint8_t info[5] = {1, 0, 0, 0, TW_OP_INFO};
        static uint8_t big[65536];
        if (send_all(fd, info, 5) || read_reply(fd, big, sizeof(big), &bl) != 0) {
            fprintf(stderr, "%s: connection unusable after a non-fatal error\n", what);
            tw_check_failures++;
        }
    }
    close(fd);
    alive(what);
}

static void test_bad_input(void)
{
    size_t len;
    uint8_t *f;

    /* Lengths that disagree with the header. */
    f = frame_sweep(TW_OP_SWEEP, 10, 1, NULL, g_combos, &len);
    uint32_t wrong = (uint32_t)(len - 4 - 8);
    memcpy(f, &wrong, 4);
    expect_error(f, len - 8, TW_WERR_BAD_FRAME, 1, "length < n_bars/n_combos");
    wrong = (uint32_t)(len - 4 + 8);
    memcpy(f, &wrong, 4);
    uint8_t *g = calloc(1, len + 8);
    memcpy(g, f, len);
    expect_error(g, len + 8, TW_WERR_BAD_FRAME, 1, "length > n_bars/n_combos");
    free(g);
    free(f);

    uint8_t unk[6] = {2, 0, 0, 0, 9, 0};
    expect_error(unk, 6, TW_WERR_BAD_FRAME, 1, "unknown opcode");
    uint8_t empty[4] = {0, 0, 0, 0};
    expect_error(empty, 4, TW_WERR_BAD_FRAME, 1, "empty frame");
    uint8_t shorth[7] = {3, 0, 0, 0, TW_OP_SWEEP, 1, 0};
    expect_error(shorth, 7, TW_WERR_BAD_FRAME, 1, "frame shorter than header");

    /* Over the limits: TOO_LARGE, and the connection stays in sync. */
    uint8_t huge[5] = {0, 0, 0, 0x40, TW_OP_ECHO};
    {
        int fd = raw_connect();
        uint8_t body[512];
        size_t bl;
        send_all(fd, huge, 5);
        int got = read_reply(fd, body, sizeof(body), &bl);
        if (got != TW_WERR_TOO_LARGE) {
            fprintf(stderr, "frame length over limit: got %d\n", got);
            tw_check_failures++;
        } else {
            printf("%-28s -> TOO_LARGE: %.*s\n", "frame length over limit", (int)bl - 2, body + 2);
        }
        close(fd);
        alive("frame length over limit");
    }
    f = frame_sweep(TW_OP_ECHO, 1000001, 0, NULL, NULL, &len);
    expect_error(f, len, TW_WERR_TOO_LARGE, 0, "n_bars over max_bars");
    free(f);
    {
        static int64_t many[10001 * 6];
        for (int i = 0; i < 10001 * 6; i++)
            many[i] = 5;
        f = frame_sweep(TW_OP_SWEEP, 10, 10001, NULL, many, &len);
        expect_error(f, len, TW_WERR_TOO_LARGE, 0, "n_combos over max_combos");
        free(f);
    }

    /* Bad windows and prices. */
    int64_t bw[6] = {1, 2, 3, 4, 5, 100001};
    f = frame_sweep(TW_OP_SWEEP, 10, 1, NULL, bw, &len);
    expect_error(f, len, TW_WERR_BAD_PARAMS, 0, "window over 100000");
    free(f);
    int64_t bw0[6] = {0, 2, 3, 4, 5, 6};
    f = frame_sweep(TW_OP_SWEEP, 10, 1, NULL, bw0, &len);
    expect_error(f, len, TW_WERR_BAD_PARAMS, 0, "window 0");
    free(f);
    double neg[4] = {1, 2, -3, 4};
    f = frame_sweep(TW_OP_SWEEP, 4, 1, neg, g_combos, &len);
    expect_error(f, len, TW_WERR_BAD_PARAMS, 0, "negative price");
    free(f);
    f = frame_sweep(TW_OP_SWEEP, 10, 0, NULL, NULL, &len);
    expect_error(f, len, TW_WERR_BAD_PARAMS, 0, "sweep with no combos");
    free(f);

    /* Unknown datasets. */
    uint8_t sl[17 + 48];
    uint32_t b = 13 + 48, nc = 1;
    uint64_t id = 987654321;
    memcpy(sl, &b, 4);
    sl[4] = TW_OP_SWEEP_LOADED;
    memcpy(sl + 5, &id, 8);
    memcpy(sl + 13, &nc, 4);
    memcpy(sl + 17, g_combos, 48);
    expect_error(sl, sizeof(sl), TW_WERR_NO_DATASET, 0, "sweep_loaded unknown id");
    uint8_t dr[13];
    b = 9;
    memcpy(dr, &b, 4);
    dr[4] = TW_OP_DROP;
    memcpy(dr + 5, &id, 8);
    expect_error(dr, sizeof(dr), TW_WERR_NO_DATASET, 0, "drop unknown id");
    uint8_t lfd[5] = {1, 0, 0, 0, TW_OP_LOAD_FD};
    expect_error(lfd, 5, TW_WERR_BAD_PARAMS, 0, "load_fd without a descriptor");
    uint8_t shm_tcp_like[9] = {5, 0, 0, 0, TW_OP_SHM_ATTACH, 0, 0, 0, 0};
    (void)shm_tcp_like;

    /* Dataset budget: max 4 held, the fifth LOAD is BUSY. */
    {
        tw_client *c;
        tw_error err = {0};
        uint64_t ids[5];
        int rc = tw_client_connect(&c, g_addr_unix, &err);
        CHECKRC(rc, err);
        for (int i = 0; i < 4; i++) {
            rc = tw_client_load(c, g_close, 100, &ids[i], &err);
            CHECKRC(rc, err);
        }
        rc = tw_client_load(c, g_close, 100, &ids[4], &err);
        REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BUSY);
        for (int i = 0; i < 4; i++) {
            rc = tw_client_drop(c, ids[i], &err);
            CHECKRC(rc, err);
        }
        tw_client_close(c);
        printf("%-28s -> BUSY, then drops ok\n", "fifth dataset over budget");
    }

    /* Truncated frames and a client that disconnects mid-frame. */
    f = frame_sweep(TW_OP_SWEEP, 1000, 2, NULL, g_combos, &len);
    for (size_t cut = 1; cut < len; cut = cut * 3 + 1) {
        int fd = raw_connect();
        send_all(fd, f, cut);
        close(fd);
    }
    {
        /* Half a frame, then shutdown of the write side: the server sees
         * end of stream inside the body. */
        int fd = raw_connect();
        send_all(fd, f, len / 2);
        shutdown(fd, SHUT_WR);
        uint8_t x;
        REQUIRE(recv(fd, &x, 1, 0) == 0);
        close(fd);
    }
    free(f);
    alive("truncated frames / disconnect mid-frame");
    printf("%-28s -> ok\n", "truncated / disconnect");

    /* 200 pipelined frames in one write: all answered, in order, even
     * though the server caps the reads it does per wakeup. */
    {
        enum { NP = 200 };
        int fd = raw_connect();
        static uint8_t many[NP * 21];
        for (int i = 0; i < NP; i++) {
            uint32_t bl = 17, nb = 1, z = 0;
            double v = i + 1;
            memcpy(many + 21 * i, &bl, 4);
            many[21 * i + 4] = TW_OP_ECHO;
            memcpy(many + 21 * i + 5, &nb, 4);
            memcpy(many + 21 * i + 9, &z, 4);
            memcpy(many + 21 * i + 13, &v, 8);
        }
        REQUIRE(send_all(fd, many, sizeof(many)) == 0);
        for (int i = 0; i < NP; i++) {
            uint8_t body[8];
            size_t bl;
            double v;
            REQUIRE(read_reply(fd, body, 8, &bl) == 0 && bl == 8);
            memcpy(&v, body, 8);
            REQUIRE(v == i + 1);
        }
        close(fd);
        printf("%-28s -> ok\n", "pipelined echo x200");
    }
}

/* ---- slow client and many clients --------------------------------------- */

/* Client threads count their failures here (tw_check_failures is not
 * atomic); the test that joined them adds them up. */
static atomic_int g_thread_failures;

static void collect_thread_failures(void)
{
    tw_check_failures += atomic_exchange(&g_thread_failures, 0);
}

static void *slow_client(void *arg)
{
    (void)arg;
    size_t len;
    uint8_t *f = frame_sweep(TW_OP_ECHO, 2, 0, NULL, NULL, &len);
    int fd = raw_connect();
    for (size_t i = 0; i < len; i++) {
        send_all(fd, f + i, 1);
        sleep_ms(3);
    }
    uint8_t body[16];
    size_t bl;
    int rc = read_reply(fd, body, sizeof(body), &bl);
    if (rc != 0 || bl != 16 || memcmp(body, f + 13, 16)) {
        fprintf(stderr, "slow client: bad reply\n");
        atomic_fetch_add(&g_thread_failures, 1);
    }
    close(fd);
    free(f);
    return NULL;
}

static void test_slow_client(void)
{
    pthread_t t;
    pthread_create(&t, NULL, slow_client, NULL);
    /* While the slow client dribbles its frame, others are served. */
    for (int i = 0; i < 20; i++)
        alive("echo during a slow client");
    pthread_join(t, NULL);
    collect_thread_failures();
    printf("%-28s -> ok\n", "slow client");
}

static void *many_client(void *arg)
{
    long k = (long)arg;
    tw_client *c;
    tw_error err = {0};
    const char *addr = k % 4 == 0 ? g_addr_tcp : k % 4 == 1 ? g_addr_shm : g_addr_unix;
    if (tw_client_connect(&c, addr, &err)) {
        fprintf(stderr, "client %ld: %s\n", k, err.msg);
        atomic_fetch_add(&g_thread_failures, 1);
        return NULL;
    }
    double in[16], out[16];
    for (int r = 0; r < 20; r++) {
        for (int i = 0; i < 16; i++)
            in[i] = k * 1000 + r * 16 + i;
        if (tw_client_echo(c, in, 16, out, &err) || memcmp(in, out, sizeof(in))) {
            fprintf(stderr, "client %ld echo: %s\n", k, err.msg);
            atomic_fetch_add(&g_thread_failures, 1);
            break;
        }
    }
    double pnl[NC];
    int64_t tr[NC];
    if (tw_client_sweep(c, g_close, NB, g_combos, NC, pnl, tr, &err) ||
        memcmp(pnl, g_pnl, sizeof(pnl)) || memcmp(tr, g_trades, sizeof(tr))) {
        fprintf(stderr, "client %ld sweep: %s\n", k, err.msg);
        atomic_fetch_add(&g_thread_failures, 1);
    }
    tw_client_close(c);
    return NULL;
}

static void test_many_clients(void)
{
    pthread_t t[64];
    for (long i = 0; i < 64; i++)
        pthread_create(&t[i], NULL, many_client, (void *)i);
    for (int i = 0; i < 64; i++)
        pthread_join(t[i], NULL);
    collect_thread_failures();
    alive("64 clients");
    printf("%-28s -> ok\n", "64 clients at once");
}

/* DROP of a dataset while a sweep on it is in flight: the sweep still
 * answers correctly (the dataset lives until its last user is done). */
static void test_drop_during_sweep(void)
{
    enum { DB = 50000, DC = 12 };
    double *dc = malloc(8 * DB);
    int64_t dcombos[DC * 6];
    double ref_pnl[DC], pnl[DC];
    int64_t ref_tr[DC], tr[DC];
    tw_error err = {0};
    tw_gen_closes(dc, DB, 11, 0.01);
    for (int i = 0; i < DC; i++)
        tw_combo_from_length(10 + 40 * i, dcombos + 6 * i);
    TW_VERIFY(tw_sweep(dc, DB, dcombos, DC, NULL, ref_pnl, ref_tr, &err) == 0);
    tw_client *a, *b;
    uint64_t id;
    int rc = tw_client_connect(&a, g_addr_unix, &err);
    CHECKRC(rc, err);
    rc = tw_client_connect(&b, g_addr_unix, &err);
    CHECKRC(rc, err);
    rc = tw_client_load(a, dc, DB, &id, &err);
    CHECKRC(rc, err);
    /* Send the sweep by hand so that the DROP can go out while it runs. */
    int fd = raw_connect();
    uint8_t h[17];
    uint32_t bl = 13 + 48 * DC, nc = DC;
    memcpy(h, &bl, 4);
    h[4] = TW_OP_SWEEP_LOADED;
    memcpy(h + 5, &id, 8);
    memcpy(h + 13, &nc, 4);
    uint64_t before = info_op("sweep_loaded");
    REQUIRE(send_all(fd, h, 17) == 0 && send_all(fd, dcombos, 48 * DC) == 0);
    for (int i = 0; info_op("sweep_loaded") == before; i++) {
        REQUIRE(i < 20000); /* the server never took the request */
        sleep_ms(1);
    }
    rc = tw_client_drop(b, id, &err);
    CHECKRC(rc, err);
    static uint8_t body[16 * DC];
    size_t got;
    REQUIRE(read_reply(fd, body, sizeof(body), &got) == 0 && got == sizeof(body));
    memcpy(pnl, body, sizeof(pnl));
    memcpy(tr, body + sizeof(pnl), sizeof(tr));
    REQUIRE(!memcmp(pnl, ref_pnl, sizeof(pnl)) && !memcmp(tr, ref_tr, sizeof(tr)));
    rc = tw_client_sweep_loaded(a, id, dcombos, 1, pnl, tr, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_NO_DATASET);
    close(fd);
    tw_client_close(a);
    tw_client_close(b);
    free(dc);
    printf("%-28s -> ok\n", "drop during sweep");
}

/* Past --max-conns (100) a new connection gets a BUSY error frame; once
 * the others close, connections are accepted again. */
static void test_conn_limit(void)
{
    static int fds[200];
    int n = 0, ok = 0, busy = 0;
    uint8_t info[5] = {1, 0, 0, 0, TW_OP_INFO};
    static uint8_t body[65536];
    while (n < 200 && !busy) {
        int fd = raw_connect();
        fds[n++] = fd;
        size_t bl;
        /* A refused connection may be closed before our request goes out:
         * its BUSY frame is still there to read. */
        (void)send_all(fd, info, 5);
        int code = read_reply(fd, body, sizeof(body), &bl);
        if (code == 0)
            ok++;
        else if (code == TW_WERR_BUSY)
            busy = 1;
        else
            break;
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    if (!busy || ok > 100) {
        fprintf(stderr, "connection limit: %d accepted, busy=%d\n", ok, busy);
        tw_check_failures++;
        return;
    }
    /* The server notices the closes asynchronously: retry until a fresh
     * connection is served (bounded by the test's timeout). */
    for (;;) {
        tw_client *c;
        tw_error err = {0};
        double x = 1, y = 0;
        int rc = tw_client_connect(&c, g_addr_unix, &err);
        if (rc == 0)
            rc = tw_client_echo(c, &x, 1, &y, &err);
        tw_client_close(c);
        if (rc == 0 && y == 1)
            break;
        if (TW_EWIRE_CODE(rc) != TW_WERR_BUSY && rc != -ECONNRESET && rc != -EPIPE) {
            fprintf(stderr, "after the connection limit: %s\n", err.msg);
            tw_check_failures++;
            return;
        }
        sleep_ms(5);
    }
    printf("%-28s -> BUSY after %d connections, then served again\n", "connection limit", ok);
}

/* spawn uses posix_spawn, which reports a missing program at once (fork
 * + exec could only report it on the first call). */
static void test_spawn_missing(void)
{
    tw_client *c = NULL;
    tw_error err = {0};
    int rc = tw_client_connect(&c, "spawn:/nonexistent/tickwire", &err);
    REQUIRE(rc == -ENOENT && c == NULL);
    REQUIRE(strstr(err.msg, "/nonexistent/tickwire") != NULL);
    printf("%-28s -> %s\n", "spawn of a missing program", err.msg);
}

/* LOAD_FD's zero-copy rule: the server maps a memfd only when it is sealed
 * against both shrinking and writing; any other descriptor is copied, so
 * the sender rewriting its file afterwards cannot change (or invalidate)
 * a dataset whose prices were checked at load time. */
static int make_memfd(const double *v, size_t n, int seals)
{
    int fd = memfd_create("test-dataset", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || ftruncate(fd, (off_t)(8 * n)) != 0 ||
        pwrite(fd, v, 8 * n, 0) != (ssize_t)(8 * n) || (seals && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void test_load_fd_seals(void)
{
    tw_client *c;
    tw_error err = {0};
    int rc = tw_client_connect(&c, g_addr_unix, &err);
    CHECKRC(rc, err);
    static double zeros[NB];
    double pnl[NC];
    int64_t tr[NC];
    const int kinds[3] = {0, F_SEAL_SHRINK | F_SEAL_GROW,
                          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE};
    for (int k = 0; k < 3; k++) {
        int fd = make_memfd(g_close, NB, kinds[k]);
        REQUIRE(fd >= 0);
        uint64_t id;
        rc = tw_client_load_fd(c, fd, &id, &err);
        if (rc)
            close(fd);
        CHECKRC(rc, err);
        /* Rewrite the file with invalid prices: refused when write-sealed,
         * and without effect on the dataset otherwise. */
        ssize_t w = pwrite(fd, zeros, sizeof(zeros), 0);
        REQUIRE(k == 2 ? w < 0 && errno == EPERM : w == (ssize_t)sizeof(zeros));
        close(fd);
        memset(pnl, 0, sizeof(pnl));
        rc = tw_client_sweep_loaded(c, id, g_combos, NC, pnl, tr, &err);
        CHECKRC(rc, err);
        REQUIRE(!memcmp(pnl, g_pnl, sizeof(pnl)) && !memcmp(tr, g_trades, sizeof(tr)));
        rc = tw_client_drop(c, id, &err);
        CHECKRC(rc, err);
    }
    /* Prices are checked on the mapped path too, whatever block the bad
     * one sits in (the check runs in vector blocks of 1024). */
    static double pr[NB];
    memcpy(pr, g_close, sizeof(pr));
    pr[5] = NAN; /* a valid price */
    const size_t bad_at[4] = {0, 1023, 2049, NB - 1};
    const double bad_v[4] = {0.0, -1.0, INFINITY, -0.0};
    for (int k = 0; k < 4; k++) {
        double keep = pr[bad_at[k]];
        pr[bad_at[k]] = bad_v[k];
        int fd = make_memfd(pr, NB, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
        REQUIRE(fd >= 0);
        uint64_t id;
        rc = tw_client_load_fd(c, fd, &id, &err);
        close(fd);
        char want[32];
        snprintf(want, sizeof(want), "close[%zu]", bad_at[k]);
        REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, want));
        pr[bad_at[k]] = keep;
    }
    int fd = make_memfd(pr, NB, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE);
    REQUIRE(fd >= 0);
    uint64_t id;
    rc = tw_client_load_fd(c, fd, &id, &err);
    close(fd);
    CHECKRC(rc, err);
    rc = tw_client_drop(c, id, &err);
    CHECKRC(rc, err);
    tw_client_close(c);
    printf("%-28s -> ok\n", "load_fd seals");
}


/* KSWEEP: zscore with its statistics and hma_sar, over closes and a loaded
 * dataset, the same bits as tw_ksweep / tw_sweep here; bad kernel, params
 * and dataset get BAD_PARAMS / NO_DATASET naming them. */
static void test_ksweep(const char *addr)
{
    tw_client *c;
    tw_error err = {0};
    int rc = tw_client_connect(&c, addr, &err);
    CHECKRC(rc, err);
    const tw_kernel_def *zs;
    rc = tw_kernel_find("zscore", &zs, &err);
    CHECKRC(rc, err);
    enum { ZC = 6 };
    double zp[ZC * 3] = {2, 0.5, 0.0, 20, 1.5, 0.5, 20, 2.0, 0.0, 77, 1.0, 0.25, 300, 2.5, 0.5,
                         5, 0.9, 0.3};
    tw_kresult ref[ZC];
    tw_ksweep_opts ko;
    tw_ksweep_opts_init(&ko);
    ko.threads = 1;
    rc = tw_ksweep(zs, g_close, NB, zp, ZC, &ko, ref, NULL, NULL, &err);
    CHECKRC(rc, err);
    double pnl[ZC], mdd[ZC], expo[ZC];
    int64_t tr[ZC], wins[ZC], fpos[ZC];
    tw_client_kout out = {pnl, tr, wins, mdd, expo, fpos};
    uint64_t id;
    rc = tw_client_load(c, g_close, NB, &id, &err);
    CHECKRC(rc, err);
    for (int loaded = 0; loaded < 2; loaded++) {
        memset(pnl, 0, sizeof(pnl));
        rc = tw_client_ksweep(c, "zscore", loaded ? NULL : g_close, NB, id, zp, 3, ZC, &out,
                              &err);
        CHECKRC(rc, err);
        for (int k = 0; k < ZC; k++) {
            REQUIRE(!memcmp(&pnl[k], &ref[k].pnl, 8) && tr[k] == ref[k].trades);
            REQUIRE(wins[k] == ref[k].wins && !memcmp(&mdd[k], &ref[k].max_drawdown, 8));
            REQUIRE(!memcmp(&expo[k], &ref[k].exposure, 8) && fpos[k] == ref[k].open.side);
        }
    }
    REQUIRE(ref[1].trades > 0);
    /* hma_sar by name, without statistics: SWEEP's bits. */
    double hp[NC * 6], hpnl[NC];
    int64_t htr[NC];
    for (int i = 0; i < NC * 6; i++)
        hp[i] = (double)g_combos[i];
    tw_client_kout hout = {hpnl, htr, NULL, NULL, NULL, NULL};
    for (int loaded = 0; loaded < 2; loaded++) {
        rc = tw_client_ksweep(c, "hma_sar", loaded ? NULL : g_close, NB, id, hp, 6, NC, &hout,
                              &err);
        CHECKRC(rc, err);
        REQUIRE(!memcmp(hpnl, g_pnl, sizeof(hpnl)) && !memcmp(htr, g_trades, sizeof(htr)));
    }
    /* Refusals, each naming what is wrong; the connection stays usable. */
    rc = tw_client_ksweep(c, "no_such_kernel", g_close, NB, 0, zp, 3, 1, &out, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "no_such_kernel"));
    rc = tw_client_ksweep(c, "/tmp/not-preloaded.so", g_close, NB, 0, zp, 3, 1, &out, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "not-preloaded"));
    rc = tw_client_ksweep(c, "zscore", g_close, NB, 0, zp, 2, 1, &out, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "3 params"));
    double bad[3] = {1, 2.0, 0.5};
    rc = tw_client_ksweep(c, "zscore", NULL, 0, id, bad, 3, 1, &out, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "window"));
    double frac[6] = {3.5, 6, 2, 1, 2, 3};
    rc = tw_client_ksweep(c, "hma_sar", NULL, 0, id, frac, 6, 1, &hout, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_BAD_PARAMS && strstr(err.msg, "h_half"));
    rc = tw_client_ksweep(c, "zscore", NULL, 0, id + 1000, zp, 3, 1, &out, &err);
    REQUIRE(TW_EWIRE_CODE(rc) == TW_WERR_NO_DATASET);
    rc = tw_client_ksweep(c, "zscore", NULL, 0, id, zp, 3, 1, &out, &err);
    CHECKRC(rc, err);
    REQUIRE(!memcmp(&pnl[0], &ref[0].pnl, 8));
    rc = tw_client_drop(c, id, &err);
    CHECKRC(rc, err);
    char info[16384];
    rc = tw_client_info(c, info, sizeof(info), &err);
    REQUIRE(rc > 0 && strstr(info, "\"kernels\":[{\"name\":\"hma_sar\"") &&
            strstr(info, "\"name\":\"zscore\",\"source\":\"builtin\",\"params\":[\"window\","
                         "\"entry\",\"exit\"]") && strstr(info, "\"ksweep\":"));
    tw_client_close(c);
    printf("%-28s -> ksweep ok\n", addr);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: test_engine /path/to/tickwire\n");
        return 2;
    }
    g_bin = argv[1];
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN);
    tw_gen_closes(g_close, NB, 42, 0.01);
    for (int i = 0; i < NC; i++)
        tw_combo_from_length(6 + 10 * i, g_combos + 6 * i);
    tw_error err = {0};
    TW_VERIFY(tw_sweep(g_close, NB, g_combos, NC, NULL, g_pnl, g_trades, &err) == 0);

    start_server();
    atexit(kill_server);
    struct stat st;
    TW_VERIFY(stat(g_sock, &st) == 0);
    if ((st.st_mode & 0777) != 0600) {
        fprintf(stderr, "socket mode %o, wanted 0600\n", st.st_mode & 0777);
        tw_check_failures++;
    }
    test_transport(g_addr_unix);
    test_transport(g_addr_tcp);
    test_transport(g_addr_shm);
    test_transport(g_addr_spawn);
    test_ksweep(g_addr_unix);
    test_ksweep(g_addr_tcp);
    test_ksweep(g_addr_shm);
    test_ksweep(g_addr_spawn);
    test_bad_input();
    test_slow_client();
    test_many_clients();
    test_conn_limit();
    test_drop_during_sweep();
    test_load_fd_seals();
    test_spawn_missing();

    /* Graceful shutdown with a sweep in flight: the sweep's reply still
     * arrives, the server exits 0 and the socket file is gone. */
    enum { LB = 50000, LC = 16 };
    double *lc = malloc(8 * LB);
    int64_t lcombos[LC * 6];
    tw_gen_closes(lc, LB, 9, 0.01);
    for (int i = 0; i < LC; i++)
        tw_combo_from_length(20 + 30 * i, lcombos + 6 * i);
    size_t flen;
    uint8_t *lf = frame_sweep(TW_OP_SWEEP, LB, LC, lc, lcombos, &flen);
    int sweeper = raw_connect();
    uint64_t sweeps_before = info_sweeps();
    TW_VERIFY(send_all(sweeper, lf, flen) == 0);
    /* Wait (no time limit but the test's) until the server has taken the
     * sweep, so that SIGTERM lands while it is in flight or just done. */
    for (int i = 0; info_sweeps() == sweeps_before; i++) {
        TW_VERIFY(i < 20000); /* the server never took the request */
        sleep_ms(1);
    }
    kill(g_pid, SIGTERM);
    {
        static uint8_t body[16 * LC];
        size_t bl = 0;
        double ref_pnl[LC];
        int64_t ref_tr[LC];
        TW_VERIFY(tw_sweep(lc, LB, lcombos, LC, NULL, ref_pnl, ref_tr, &err) == 0);
        int code = read_reply(sweeper, body, sizeof(body), &bl);
        if (code != 0 || bl != sizeof(body) || memcmp(body, ref_pnl, sizeof(ref_pnl)) ||
            memcmp(body + sizeof(ref_pnl), ref_tr, sizeof(ref_tr))) {
            fprintf(stderr, "in-flight sweep lost at shutdown (code %d, %zu bytes)\n", code, bl);
            tw_check_failures++;
        } else {
            printf("%-28s -> reply delivered\n", "sweep in flight at SIGTERM");
        }
    }
    close(sweeper);
    free(lf);
    free(lc);
    int status = 0;
    waitpid(g_pid, &status, 0);
    g_pid = 0;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "server did not exit cleanly on SIGTERM (status %d)\n", status);
        tw_check_failures++;
    }
    if (access(g_sock, F_OK) == 0) {
        fprintf(stderr, "socket file left behind\n");
        unlink(g_sock);
        tw_check_failures++;
    }
    return tw_check_done("test_engine");
}
