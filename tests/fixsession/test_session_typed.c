/* The session as the live trader drives it (live.md, "The venue
 * protocol"): on_msg gets each application message decoded (X entries
 * with prices exact as float64, fills, TradingSessionStatus); a
 * TestRequest whose id starts with "bar-" is held by on_test_request and
 * answered later with tw_fix_session_heartbeat, any other is answered at
 * once; SendingTime is the monotonic now_ns plus the epoch offset. */
#include <math.h>
#include <string.h>

#include "tickwire/decimal.h"
#include "tickwire/fix_session.h"
#include "tw_check.h"

static char out[1 << 16];
static size_t out_len;

static int sink(void *ctx, const char *buf, size_t len)
{
    (void)ctx;
    if (out_len + len > sizeof(out))
        return -1;
    memcpy(out + out_len, buf, len);
    out_len += len;
    return 0;
}

/* What the callbacks saw. */
static tw_fix_kind kinds[16];
static int nkinds;
static double px[4];
static uint32_t n_entries;
static double last_px;
static int32_t rej_reason = -7;
static int32_t ses_status;
static char held[32];

static void on_msg(void *ctx, tw_fix_session *s, const tw_fix_decoded *d, int possdup)
{
    (void)ctx, (void)s, (void)possdup;
    CHECK_EQ(d->rc, 0);
    if (nkinds < 16)
        kinds[nkinds++] = d->kind;
    /* The views are there for anything the typed struct does not hold. */
    CHECK(d->msg.count >= 4 && tw_fix_get(&d->msg, 34) != NULL);
    if (d->kind == TW_FIX_K_MD_INCREMENTAL) {
        n_entries = d->u.md.n_entries;
        for (uint32_t i = 0; i < n_entries && i < 4; i++)
            px[i] = d->entries[i].px_f64;
    } else if (d->kind == TW_FIX_K_EXEC_REPORT) {
        last_px = d->u.exec_report.last_px_f64;
        rej_reason = d->u.exec_report.ord_rej_reason;
    } else if (d->kind == TW_FIX_K_TRADING_SESSION_STATUS) {
        ses_status = d->u.trading_session_status.trad_ses_status;
    }
}

static int on_test_request(void *ctx, tw_fix_session *s, const char *id, size_t len)
{
    (void)ctx, (void)s;
    if (len < 4 || memcmp(id, "bar-", 4) != 0)
        return 0;
    memcpy(held, id, len < sizeof(held) - 1 ? len : sizeof(held) - 1);
    return 1;
}

static tw_fix_template venue;
static uint64_t venue_seq = 1;

/* Feeds the session a venue message built from body fields "tag=v|...". */
static void feed(tw_fix_session *s, const char *type, const char *fields, int64_t now_ns)
{
    char buf[1024], f[512];
    size_t n = strlen(fields);
    for (size_t i = 0; i < n; i++)
        f[i] = fields[i] == '|' ? '\x01' : fields[i];
    tw_fix_wbuf w;
    tw_fix_build_begin(&w, &venue, buf, sizeof(buf), type, venue_seq++,
                       1710493200000000000ll + now_ns);
    tw_fix_put_raw(&w, f, n);
    const char *m;
    size_t len;
    REQUIRE(tw_fix_build_end(&w, &m, &len) == 0);
    CHECK_EQ(tw_fix_session_input(s, m, len, now_ns), len);
}

/* The last message the session wrote, decoded. */
static int last_out(tw_fix_decoded *d)
{
    size_t off = 0, last = 0, skip;
    int n = 0;
    while (off < out_len) {
        int rc = tw_fix_frame(out + off, out_len - off, 0, &skip);
        if (rc <= 0)
            return 0;
        last = off;
        off += (size_t)rc;
        n++;
    }
    return n && tw_fix_decode(out + last, out_len - last, d, &skip) > 0 && d->rc == 0;
}

static void run(void)
{
    static tw_fix_session s;
    static tw_fix_md_entry ent[8];
    const int64_t offset = 1710493200000000000ll; /* the epoch at monotonic 0 */
    tw_fix_session_cfg cfg = {
        .begin_string = "FIX.4.4", .sender_comp_id = "TW", .target_comp_id = "VENUE",
        .initiator = 1, .heart_bt_int_s = 30, .ts_digits = 9, .epoch_offset_ns = offset,
        .decode_flags = TW_FIX_PX_F64, .md_entries = ent, .md_entries_cap = 8,
        .stream = { sink, NULL, NULL },
        .app = { .on_msg = on_msg, .on_test_request = on_test_request },
    };
    tw_error err;
    REQUIRE(tw_fix_session_init(&s, &cfg, &err) == 0);
    REQUIRE(tw_fix_template_init(&venue, "FIX.4.4", "VENUE", "TW", NULL, NULL, 6, NULL) == 0);

    /* Logon at monotonic 1 s: SendingTime is the offset plus 1 s. */
    int64_t now = 1000000000;
    CHECK_EQ(tw_fix_session_connected(&s, now), 0);
    tw_fix_decoded d = { .px_decimals = 8 };
    REQUIRE(last_out(&d));
    CHECK_EQ(d.kind, TW_FIX_K_LOGON);
    CHECK_EQ(d.hdr.sending_time_ns, offset + now);
    CHECK_EQ(tw_fix_session_epoch_ns(&s, now), offset + now);
    feed(&s, "A", "98=0|108=30|", now);
    REQUIRE(s.state == TW_FIX_ACTIVE);

    /* Session open, then a bar of two instruments; the second price is a
     * float64 fixed point at 8 decimals cannot hold. */
    now += 1000;
    feed(&s, "h", "336=1|340=2|", now);
    CHECK_EQ(ses_status, 2);
    feed(&s, "X",
         "262=R1|268=2|279=0|269=2|55=AAA|278=7|270=101.25|271=1|"
         "279=0|269=2|55=BBB|278=7|270=100.0000000000001|271=1|",
         now);
    CHECK_EQ(n_entries, 2);
    double want;
    CHECK(tw_decimal_to_double("100.0000000000001", 17, &want) == 0);
    CHECK(px[0] == 101.25);
    CHECK(memcmp(&px[1], &want, sizeof(want)) == 0);

    /* The lockstep barrier: held, nothing written, until the trader says. */
    size_t before = out_len;
    feed(&s, "1", "112=bar-7|", now);
    CHECK_EQ(out_len, before);
    CHECK(strcmp(held, "bar-7") == 0);
    now += 5000;
    CHECK_EQ(tw_fix_session_heartbeat(&s, held, strlen(held), now), 0);
    REQUIRE(last_out(&d));
    CHECK_EQ(d.kind, TW_FIX_K_HEARTBEAT);
    CHECK(d.u.heartbeat.test_req_id.len == 5 &&
          memcmp(d.u.heartbeat.test_req_id.p, "bar-7", 5) == 0);
    CHECK_EQ(d.hdr.sending_time_ns, offset + now);
    /* Any other TestRequest is answered at once. */
    before = out_len;
    feed(&s, "1", "112=TEST1|", now);
    CHECK(out_len > before);
    REQUIRE(last_out(&d));
    CHECK_EQ(d.kind, TW_FIX_K_HEARTBEAT);

    /* A fill. */
    feed(&s, "8",
         "37=O1|11=C1|1=inst-0|17=E1|150=F|39=2|55=AAA|54=1|38=1|32=1|31=101.25|151=0|14=1|"
         "6=101.25|60=20240315-09:00:00.000000|",
         now);
    CHECK(last_px == 101.25);
    CHECK_EQ(rej_reason, -1);
    /* A reject: OrdRejReason 2 (an order before any priced bar). */
    feed(&s, "8",
         "37=O2|11=C2|1=inst-0|17=E2|150=8|39=8|55=CCC|54=1|38=1|151=0|14=0|6=0|103=2|"
         "58=no price yet|",
         now);
    CHECK_EQ(rej_reason, 2);
    CHECK(isnan(last_px));
    CHECK_EQ(nkinds, 4);
    CHECK(kinds[0] == TW_FIX_K_TRADING_SESSION_STATUS && kinds[1] == TW_FIX_K_MD_INCREMENTAL &&
          kinds[2] == TW_FIX_K_EXEC_REPORT);

    /* The offset can follow a clock step. */
    tw_fix_session_set_epoch_offset(&s, offset + 3000000000ll);
    CHECK_EQ(tw_fix_session_epoch_ns(&s, now), offset + 3000000000ll + now);
    CHECK_EQ(s.st.app_in, 4);
}

int main(void)
{
    run();
    return tw_check_done("fix_session_typed");
}
