/* libFuzzer target: bytes into an established FIX session (acceptor,
 * logged on, three application messages stored so resends have work).
 *
 * Input: first byte selects the mode (bit 1: store appends through mmap).
 *   even: the rest is raw stream bytes, fed in chunks whose sizes and the
 *         clock steps between them come from the data itself;
 *   odd:  the rest is lines of '|'-separated fields that the harness frames
 *         (8, 9, 10 added) so the fuzzer reaches the session logic past the
 *         CheckSum; a line starting with '+' advances the clock.
 * Invariants checked: every byte the session writes frames as a valid FIX
 * message, sequence numbers never go backwards except through a reset,
 * and nothing crashes. */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tickwire/fix_session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char out[1 << 16];
static size_t out_len;

static int f_write(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    /* Each write is one whole message: check it frames exactly. */
    size_t skip = 0;
    TW_VERIFY(tw_fix_frame(buf, len, 0, &skip) == (int)len);
    if (out_len + len > sizeof(out))
        out_len = 0;
    memcpy(out + out_len, buf, len);
    out_len += len;
    return 0;
}

static void f_close(void *ctx)
{
    (void)ctx;
}

static char rx[1 << 17];
static size_t rx_len;

static void feed(tw_fix_session *s, const char *b, size_t n, int64_t now)
{
    if (n > sizeof(rx) - rx_len)
        n = sizeof(rx) - rx_len;
    memcpy(rx + rx_len, b, n);
    rx_len += n;
    size_t used = tw_fix_session_input(s, rx, rx_len, now);
    TW_VERIFY(used <= rx_len);
    memmove(rx, rx + used, rx_len - used);
    rx_len -= used;
    if (s->state == TW_FIX_DISCONNECTED || rx_len == sizeof(rx))
        rx_len = 0;
}

static void frame_line(tw_fix_session *s, const char *l, size_t n, int64_t now)
{
    char body[4096], msg[4200];
    size_t bl = 0;
    for (size_t i = 0; i < n && bl < sizeof(body) - 1; i++)
        body[bl++] = l[i] == '|' ? '\x01' : l[i];
    if (bl && body[bl - 1] != '\x01')
        body[bl++] = '\x01';
    int ml = snprintf(msg, sizeof(msg), "8=FIX.4.4\x01" "9=%zu\x01", bl);
    memcpy(msg + ml, body, bl);
    ml += (int)bl;
    unsigned sum = 0;
    for (int i = 0; i < ml; i++)
        sum += (unsigned char)msg[i];
    ml += snprintf(msg + ml, sizeof(msg) - (size_t)ml, "10=%03u\x01", sum & 255);
    feed(s, msg, (size_t)ml, now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tw_fix_store store;
    static tw_fix_session s;
    if (size == 0)
        return 0;
    int fd = memfd_create("fixfuzz", 0);
    TW_VERIFY(fd >= 0);
    /* Bit 1 of the mode byte picks the store's append mode. */
    tw_fix_store_cfg sc = { .path = NULL, .fd = fd, .fsync = TW_FIX_FSYNC_NONE, .index_cap = 64,
                            .mmap_bytes = (data[0] & 2) ? 4096 : 0 };
    TW_VERIFY(tw_fix_store_open(&store, &sc, NULL) == 0);
    tw_fix_session_cfg cfg = { .begin_string = "FIX.4.4", .sender_comp_id = "TW",
                               .target_comp_id = "PEER", .initiator = 0, .heart_bt_int_s = 30,
                               .ts_digits = 3, .store = &store,
                               .stream = { f_write, f_close, NULL } };
    TW_VERIFY(tw_fix_session_init(&s, &cfg, NULL) == 0);
    int64_t now = 1767323045000000000LL; /* 2026-01-02 03:04:05 */
    out_len = 0;
    rx_len = 0; /* nothing carries over from the previous input */
    tw_fix_session_connected(&s, now);
    static const char logon[] = "35=A|49=PEER|56=TW|34=1|52=20260102-03:04:05|98=0|108=30";
    frame_line(&s, logon, sizeof(logon) - 1, now);
    TW_VERIFY(s.state == TW_FIX_ACTIVE);
    for (int i = 0; i < 3; i++) {
        tw_fix_wbuf *w = tw_fix_session_begin(&s, "8", now);
        TW_VERIFY(w != NULL);
        tw_fix_put_cstr(w, 37, "ORD");
        tw_fix_put_u64(w, 17, (uint64_t)i);
        TW_VERIFY(tw_fix_session_send(&s, now) == 0);
    }
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    if ((data[0] & 1) == 0) {
        size_t i = 0;
        while (i < n && s.state != TW_FIX_DISCONNECTED) {
            size_t chunk = 1 + (size_t)(unsigned char)p[i] % 64;
            if (chunk > n - i)
                chunk = n - i;
            feed(&s, p + i, chunk, now);
            now += (int64_t)((unsigned char)p[i] % 4) * 1000000000LL;
            tw_fix_session_timer(&s, now);
            i += chunk;
        }
    } else {
        size_t i = 0;
        while (i < n && s.state != TW_FIX_DISCONNECTED) {
            const char *e = memchr(p + i, '\n', n - i);
            size_t ll = e ? (size_t)(e - (p + i)) : n - i;
            if (ll > 0 && p[i] == '+') {
                now += (int64_t)(ll * 5) * 1000000000LL;
                tw_fix_session_timer(&s, now);
            } else if (ll > 0) {
                uint64_t before_in = s.next_in;
                frame_line(&s, p + i, ll, now);
                /* Only a SequenceReset-Reset or a Logon with reset may move
                 * the expected number backwards; neither does it here
                 * without a Reject, so it must never decrease. */
                TW_VERIFY(s.next_in >= before_in || s.state == TW_FIX_DISCONNECTED);
            }
            i += ll + 1;
        }
    }
    tw_fix_store_close(&store); /* closes the memfd */
    return 0;
}
