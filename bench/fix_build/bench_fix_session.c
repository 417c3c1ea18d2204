/* ns per message through the session layer, with and without the
 * crash-safe store: sending a NewOrderSingle (build + store record +
 * stream write) and receiving an ExecutionReport (frame + parse + session
 * checks + next-in record + application callback).  The stream is a
 * memory sink, so the figures are the session's own cost.  Asserts the
 * message counts before printing; medians of 5 runs. */
#include <string.h>
#include <unistd.h>

#include "tickwire/clock.h"
#include "tickwire/fix_session.h"

#define N 100000

static size_t sink_bytes;
static uint64_t app_msgs;

static int sink_write(void *ctx, const char *buf, size_t len)
{
    (void)ctx, (void)buf;
    sink_bytes += len;
    return 0;
}

static void on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    (void)ctx, (void)s, (void)possdup;
    app_msgs += d->msg.count > 0;
}

static double now_s(void)
{
    return (double)tw_clock_now_ns() * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static char path[256];
static tw_fix_store store;
static tw_fix_session sess;
static char *stream_buf;
static size_t stream_len;

static void setup(int with_store, int64_t now)
{
    tw_fix_store *st = NULL;
    if (with_store) {
        unlink(path);
        tw_fix_store_cfg sc = { .path = path, .fsync = TW_FIX_FSYNC_NONE, .index_cap = 2 * N,
                                .mmap_bytes = with_store == 2 ? 1u << 20 : 0 };
        TW_VERIFY(tw_fix_store_open(&store, &sc, NULL) == 0);
        st = &store;
    }
    tw_fix_session_cfg cfg = { .begin_string = "FIX.4.4", .sender_comp_id = "TW",
                               .target_comp_id = "VENUE", .initiator = 1, .heart_bt_int_s = 30,
                               .ts_digits = 3, .store = st,
                               .stream = { sink_write, NULL, NULL },
                               .app = { .on_msg = on_msg } };
    TW_VERIFY(tw_fix_session_init(&sess, &cfg, NULL) == 0);
    tw_fix_session_connected(&sess, now);
    /* The venue's Logon answer. */
    tw_fix_template vt;
    TW_VERIFY(tw_fix_template_init(&vt, "FIX.4.4", "VENUE", "TW", NULL, NULL, 3, NULL) == 0);
    char buf[256];
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, &vt, buf, sizeof(buf), "A", 1, now);
    tw_fix_put_char(&w, 98, '0');
    tw_fix_put_u64(&w, 108, 30);
    const char *m;
    size_t len;
    TW_VERIFY(tw_fix_build_end(&w, &m, &len) == 0);
    TW_VERIFY(tw_fix_session_input(&sess, m, len, now) == len);
    TW_VERIFY(sess.state == TW_FIX_ACTIVE);
}

static void teardown(int with_store)
{
    if (with_store) {
        tw_fix_store_close(&store);
        unlink(path);
    }
}

/* N ExecutionReports from the venue, seq 2.., as one byte stream. */
static void make_stream(int64_t now)
{
    tw_fix_template vt;
    TW_VERIFY(tw_fix_template_init(&vt, "FIX.4.4", "VENUE", "TW", NULL, NULL, 3, NULL) == 0);
    stream_buf = malloc((size_t)N * 320);
    TW_VERIFY(stream_buf != NULL);
    stream_len = 0;
    for (int i = 0; i < N; i++) {
        char buf[320];
        tw_fix_wbuf w;
        tw_fix_build_begin(&w, &vt, buf, sizeof(buf), "8", (uint64_t)i + 2, now);
        tw_fix_put_u64(&w, 37, (uint64_t)i);
        tw_fix_put_u64(&w, 11, (uint64_t)i);
        tw_fix_put_u64(&w, 17, (uint64_t)i * 3);
        tw_fix_put_char(&w, 150, 'F');
        tw_fix_put_char(&w, 39, '2');
        tw_fix_put_cstr(&w, 55, "EURUSD");
        tw_fix_put_char(&w, 54, '1');
        tw_fix_put_u64(&w, 38, 1000000);
        tw_fix_put_u64(&w, 32, 1000000);
        tw_fix_put_fixed(&w, 31, 108725, 5);
        tw_fix_put_u64(&w, 151, 0);
        tw_fix_put_u64(&w, 14, 1000000);
        tw_fix_put_fixed(&w, 6, 108725, 5);
        tw_fix_put_ts(&w, 60, now, 3);
        const char *m;
        size_t len;
        TW_VERIFY(tw_fix_build_end(&w, &m, &len) == 0);
        memcpy(stream_buf + stream_len, m, len);
        stream_len += len;
    }
}

static double run_send(int with_store)
{
    double runs[5];
    int64_t now = 1767323045000000000LL;
    for (int r = 0; r < 5; r++) {
        setup(with_store, now);
        uint64_t before = sess.st.app_out;
        double t0 = now_s();
        for (int i = 0; i < N; i++) {
            now += 1000;
            tw_fix_wbuf *w = tw_fix_session_begin(&sess, "D", now);
            TW_VERIFY(w != NULL);
            tw_fix_put_u64(w, 11, (uint64_t)i);
            tw_fix_put_char(w, 21, '1');
            tw_fix_put_cstr(w, 55, "EURUSD");
            tw_fix_put_char(w, 54, '1');
            tw_fix_put_ts(w, 60, now, 3);
            tw_fix_put_u64(w, 38, 1000000);
            tw_fix_put_char(w, 40, '2');
            tw_fix_put_fixed(w, 44, 108725, 5);
            TW_VERIFY(tw_fix_session_send(&sess, now) == 0);
        }
        runs[r] = (now_s() - t0) * 1e9 / N;
        TW_VERIFY(sess.st.app_out - before == N);
        if (with_store)
            TW_VERIFY(store.n == N);
        teardown(with_store);
    }
    qsort(runs, 5, sizeof(runs[0]), cmp_d);
    return runs[2];
}

static double run_recv(int with_store)
{
    double runs[5];
    int64_t now = 1767323045000000000LL;
    for (int r = 0; r < 5; r++) {
        setup(with_store, now);
        app_msgs = 0;
        double t0 = now_s();
        size_t pos = 0;
        while (pos < stream_len) {
            /* Feed as a socket would: 64 KB reads, the rest kept. */
            size_t chunk = stream_len - pos < 65536 ? stream_len - pos : 65536;
            size_t used = tw_fix_session_input(&sess, stream_buf + pos, chunk, now);
            TW_VERIFY(used > 0);
            pos += used;
        }
        runs[r] = (now_s() - t0) * 1e9 / N;
        TW_VERIFY(app_msgs == N && sess.st.garbled == 0 && sess.next_in == (uint64_t)N + 2);
        teardown(with_store);
    }
    qsort(runs, 5, sizeof(runs[0]), cmp_d);
    return runs[2];
}

int main(void)
{
    snprintf(path, sizeof(path), "/tmp/tw_fixbench_%d.store", (int)getpid());
    make_stream(1767323045000000000LL);
    double s0 = run_send(0), s1 = run_send(1), s2 = run_send(2);
    double r0 = run_recv(0), r1 = run_recv(1), r2 = run_recv(2);
    printf("FIX session, ns/msg (median of 5 runs of %d; stream = memory sink)\n", N);
    printf("  %-48s %8.1f\n", "send NewOrderSingle, no store", s0);
    printf("  %-48s %8.1f   (%.1fx no store)\n", "send NewOrderSingle, store pwritev, fsync none",
           s1, s1 / s0);
    printf("  %-48s %8.1f   (%.1fx no store)\n", "send NewOrderSingle, store mmap, fsync none", s2,
           s2 / s0);
    printf("  %-48s %8.1f\n", "receive ExecutionReport, no store", r0);
    printf("  %-48s %8.1f   (%.1fx no store)\n",
           "receive ExecutionReport, store pwritev, fsync none", r1, r1 / r0);
    printf("  %-48s %8.1f   (%.1fx no store)\n", "receive ExecutionReport, store mmap, fsync none",
           r2, r2 / r0);
    free(stream_buf);
    return 0;
}
