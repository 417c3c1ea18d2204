/* The application's hold on a TestRequest (fix_session.h: on_test_request,
 * tw_fix_session_heartbeat), which the live engine's lockstep barrier is
 * built on (live.md, "Lockstep"): an initiator and an acceptor over
 * in-memory pipes; the acceptor sends TestRequests through its
 * application path, as the venue does.  An id starting with "bar-" is
 * held by the hook and answered only when the application says so; any
 * other is answered at once by the session; without the hook every
 * TestRequest is answered at once; the call refuses a session that is not
 * logged on and an id too long for a message. */
#include <errno.h>
#include <string.h>

#include "tickwire/fix_session.h"
#include "tw_check.h"

typedef struct pipe_ {
    char buf[1 << 16];
    size_t len;
} pipe_;

typedef struct end {
    tw_fix_session s;
    pipe_ out; /* what this end wrote, not yet delivered */
    int held;  /* TestRequests the hook took */
    char held_id[64];
    size_t held_len;
} end;

static int p_write(void *ctx, const char *buf, size_t len)
{
    end *e = ctx;
    TW_VERIFY(e->out.len + len <= sizeof(e->out.buf));
    memcpy(e->out.buf + e->out.len, buf, len);
    e->out.len += len;
    return 0;
}

static void p_close(void *ctx) { (void)ctx; }

static int hold_bars(void *ctx, tw_fix_session *s, const char *id, size_t len)
{
    end *e = ctx;
    (void)s;
    if (len < 4 || memcmp(id, "bar-", 4) != 0)
        return 0;
    TW_VERIFY(len < sizeof(e->held_id));
    memcpy(e->held_id, id, len);
    e->held_len = len;
    e->held++;
    return 1;
}

/* Delivers what `from` wrote to `to`. */
static void pump(end *from, end *to, int64_t now)
{
    size_t off = 0;
    while (off < from->out.len)
        off += tw_fix_session_input(&to->s, from->out.buf + off, from->out.len - off, now);
    from->out.len = 0;
}

/* Heartbeats with 112=<id> in what e wrote (without delivering it). */
static int heartbeats_with(const end *e, const char *id)
{
    char needle[96];
    snprintf(needle, sizeof(needle), "\x01" "35=0\x01");
    int n = 0;
    const char *p = e->out.buf, *endp = e->out.buf + e->out.len;
    char want[96];
    snprintf(want, sizeof(want), "\x01" "112=%s\x01", id);
    while (p < endp) {
        const char *m = memmem(p, (size_t)(endp - p), "8=FIX", 5);
        if (!m)
            break;
        const char *next = memmem(m + 5, (size_t)(endp - m - 5), "8=FIX", 5);
        size_t mlen = (size_t)((next ? next : endp) - m);
        if (memmem(m, mlen, needle, strlen(needle)) && memmem(m, mlen, want, strlen(want)))
            n++;
        p = m + mlen;
    }
    return n;
}

static void test_request(end *acc, const char *id, int64_t now)
{
    tw_fix_wbuf *w = tw_fix_session_begin(&acc->s, "1", now);
    TW_VERIFY(w != NULL);
    tw_fix_put_cstr(w, 112, id);
    TW_VERIFY(tw_fix_session_send(&acc->s, now) == 0);
}

static void run(int with_hook)
{
    static end ini, acc;
    memset(&ini, 0, sizeof(ini));
    memset(&acc, 0, sizeof(acc));
    tw_fix_session_cfg ci = {.begin_string = "FIX.4.4", .sender_comp_id = "TRADER",
                             .target_comp_id = "VENUE", .initiator = 1, .heart_bt_int_s = 30,
                             .stream = {p_write, p_close, &ini},
                             .app = {.on_test_request = with_hook ? hold_bars : NULL,
                                     .ctx = &ini}};
    tw_fix_session_cfg ca = {.begin_string = "FIX.4.4", .sender_comp_id = "VENUE",
                             .target_comp_id = "TRADER", .initiator = 0,
                             .stream = {p_write, p_close, &acc}};
    tw_error err = {0};
    REQUIRE(tw_fix_session_init(&ini.s, &ci, &err) == 0);
    REQUIRE(tw_fix_session_init(&acc.s, &ca, &err) == 0);
    int64_t now = 1000000000;
    /* Not logged on yet: nothing to answer on. */
    CHECK_EQ(tw_fix_session_heartbeat(&ini.s, "bar-0", 5, now), -ENOTCONN);
    tw_fix_session_connected(&acc.s, now);
    tw_fix_session_connected(&ini.s, now);
    pump(&ini, &acc, now);
    pump(&acc, &ini, now);
    REQUIRE(ini.s.state == TW_FIX_ACTIVE && acc.s.state == TW_FIX_ACTIVE);

    test_request(&acc, "bar-7", now);
    test_request(&acc, "hello", now);
    pump(&acc, &ini, now);
    CHECK_EQ(heartbeats_with(&ini, "hello"), 1); /* answered at once, as FIX says */
    CHECK_EQ(heartbeats_with(&ini, "bar-7"), with_hook ? 0 : 1);
    CHECK_EQ(ini.held, with_hook ? 1 : 0);
    pump(&ini, &acc, now);
    if (with_hook) {
        CHECK(ini.held_len == 5 && memcmp(ini.held_id, "bar-7", 5) == 0);
        /* The application's answer, later. */
        now += 1000;
        CHECK_EQ(tw_fix_session_heartbeat(&ini.s, ini.held_id, ini.held_len, now), 0);
        CHECK_EQ(heartbeats_with(&ini, "bar-7"), 1);
        uint64_t before = acc.s.next_in;
        pump(&ini, &acc, now);
        CHECK_EQ(acc.s.next_in, before + 1); /* in sequence: the peer took it */
        CHECK(acc.s.state == TW_FIX_ACTIVE);
        char big[TW_FIX_TESTREQID_MAX + 1];
        memset(big, 'x', sizeof(big));
        CHECK_EQ(tw_fix_session_heartbeat(&ini.s, big, sizeof(big), now), -EINVAL);
        CHECK_EQ(tw_fix_session_heartbeat(&ini.s, NULL, 3, now), -EINVAL);
    }
    /* A logged-out session refuses. */
    CHECK_EQ(tw_fix_session_logout(&ini.s, NULL, now), 0);
    pump(&ini, &acc, now);
    pump(&acc, &ini, now);
    CHECK_EQ(tw_fix_session_heartbeat(&ini.s, "bar-8", 5, now), -ENOTCONN);
}

int main(void)
{
    run(1);
    run(0);
    return tw_check_done("fix_session_test_request");
}
