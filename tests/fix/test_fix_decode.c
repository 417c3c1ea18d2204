/* The one-pass typed decoder (tw_fix_decode) against the four-call path it
 * replaces (tw_fix_frame + tw_fix_parse + tw_fix_read_header + the type's
 * accessor): the same return, skip, error codes and, when it decodes, the
 * same header, body struct, entries and field views.  On every golden
 * message, every truncation of each, a stream fed byte by byte, messages
 * against a guard page, random messages of the one-pass types (fields in
 * any order, repeated, missing, bad values, groups that lie), random
 * corruptions; each with every ISA the CPU has, which must also agree with
 * each other.  Then prices: the float64 is tw_decimal_to_double's, bit for
 * bit, and TW_FIX_PX_F64 keeps prices fixed point cannot hold.
 * Usage: test_fix_decode tests/fix/golden/messages.fix */
#include <math.h>

#include "decode_ref.h"
#include "fix_test.h"
#include "tickwire/decimal.h"

static const tw_isa isas[] = { TW_ISA_SCALAR, TW_ISA_SSE2, TW_ISA_AVX2, TW_ISA_AVX512 };

static golden gold[GOLDEN_MAX];
static int ngold;


static long compared, decoded_ok, random_ok[5], random_n[5];

/* tw_fix_decode with isa against the reference; 1 if they agree. */
static int agree(tw_isa isa, const char *buf, size_t len, unsigned flags, unsigned dec,
                 uint32_t ecap, uint32_t fcap, int with_fields, const char *what)
{
    static ref r;
    int decoded;
    const char *diff = ref_agree(isa, buf, len, flags, dec, ecap, fcap, with_fields, &r, &decoded);
    compared++;
    decoded_ok += decoded;
    if (diff) {
        fprintf(stderr, "%s (%s, flags %u, dec %u, ecap %u, fcap %u, fields %d): %s differs "
                        "(reference: ret %d skip %zu rc %d parse_rc %d kind %d)\n  ",
                what, tw_isa_name(isa), flags, dec, ecap, fcap, with_fields, diff, r.ret, r.skip,
                r.rc, r.parse_rc, (int)r.kind);
        for (size_t i = 0; i < len && i < 400; i++)
            fputc(buf[i] == TW_FIX_SOH ? '|' : buf[i], stderr);
        fputc('\n', stderr);
        tw_check_failures++;
    }
    return diff == NULL;
}

/* Every ISA the CPU has, with and without field views. */
static void agree_all(const char *buf, size_t len, unsigned flags, unsigned dec, uint32_t ecap,
                      uint32_t fcap, const char *what)
{
    for (size_t k = 0; k < TW_ARRAY_SIZE(isas); k++) {
        if (!tw_cpu_has(isas[k]))
            continue;
        agree(isas[k], buf, len, flags, dec, ecap, fcap, 0, what);
        agree(isas[k], buf, len, flags, dec, ecap, fcap, 1, what);
    }
    /* And the process's own choice through the public entry point. */
    static tw_fix_md_entry ent[64];
    tw_fix_decoded d = { .flags = flags, .px_decimals = dec, .entries = ent, .entries_cap = ecap };
    size_t s1 = 0, s2 = 0;
    int a = tw_fix_decode(buf, len, &d, &s1);
    tw_fix_decoded e = d;
    int b = tw_fix_decode_isa(tw_fix_isa_active(), buf, len, &e, &s2);
    CHECK(a == b && s1 == s2 && d.rc == e.rc);
}

/* ---- golden messages, truncations, streams, guard pages --------------------- */

static void test_golden(void)
{
    static const unsigned decs[] = { 8, 2, 5, 0, 18 };
    for (int i = 0; i < ngold; i++) {
        guard g = guard_alloc(gold[i].p, gold[i].len);
        for (size_t k = 0; k < TW_ARRAY_SIZE(decs); k++) {
            agree_all(g.p, gold[i].len, 0, decs[k], 64, 512, "golden");
            agree_all(g.p, gold[i].len, TW_FIX_NO_CHECKSUM, decs[k], 2, 512, "golden, 2 entries");
            agree_all(g.p, gold[i].len, TW_FIX_NO_BODYLEN, decs[k], 64, 12, "golden, 12 fields");
        }
        guard_free(&g);
    }
    /* Known values straight from the one-pass path. */
    tw_fix_md_entry ent[8];
    tw_fix_decoded d = { .px_decimals = 8, .entries = ent, .entries_cap = 8 };
    size_t skip;
    CHECK_EQ(tw_fix_decode(gold[16].p, gold[16].len, &d, &skip), gold[16].len);
    CHECK_EQ(d.rc, 0);
    CHECK_EQ(d.kind, TW_FIX_K_EXEC_REPORT);
    CHECK_STR(d.u.exec_report.order_id, "V-1");
    CHECK_EQ(d.u.exec_report.last_px, 108346000);
    CHECK(d.u.exec_report.last_px_f64 == 1.08346);
    CHECK(d.u.exec_report.avg_px_f64 == 1.08346);
    CHECK(d.u.exec_report.price_f64 == 1.08345);
    CHECK_EQ(d.u.exec_report.leaves_qty, 750000);
    CHECK_EQ(d.hdr.msg_seq_num, 2);
    CHECK_STR(d.hdr.sender_comp_id, "VENUE");
    CHECK_EQ(tw_fix_decode(gold[18].p, gold[18].len, &d, &skip), gold[18].len);
    CHECK_EQ(d.rc, 0);
    CHECK_EQ(d.kind, TW_FIX_K_MD_INCREMENTAL);
    CHECK_EQ(d.u.md.n_entries, 2);
    CHECK(ent[0].px_f64 == 1.08341 && ent[1].px_f64 == 1.0835);
    CHECK_EQ(ent[0].number_of_orders, 3);
    CHECK_STR(ent[1].symbol, "EUR/USD");
    /* Golden 13's third entry has no MDEntryPx: NaN (a gap bar). */
    CHECK_EQ(tw_fix_decode(gold[13].p, gold[13].len, &d, &skip), gold[13].len);
    CHECK_EQ(d.rc, 0);
    CHECK(isnan(ent[2].px_f64) && ent[2].px == 0);
    CHECK_EQ(tw_fix_decode(gold[2].p, gold[2].len, &d, &skip), gold[2].len);
    CHECK_EQ(d.kind, TW_FIX_K_HEARTBEAT);
    CHECK_STR(d.u.heartbeat.test_req_id, "TEST42");
    CHECK_EQ(tw_fix_decode(gold[0].p, gold[0].len, &d, &skip), gold[0].len);
    CHECK_EQ(d.kind, TW_FIX_K_LOGON);
    CHECK_EQ(d.u.logon.heart_bt_int_s, 30);
}

static void test_truncations(void)
{
    for (int i = 0; i < ngold; i++)
        for (size_t n = 0; n < gold[i].len; n++) {
            guard g = guard_alloc(gold[i].p, n);
            for (size_t k = 0; k < TW_ARRAY_SIZE(isas); k++) {
                if (!tw_cpu_has(isas[k]))
                    continue;
                tw_fix_decoded d = { .px_decimals = 8 };
                size_t skip;
                int rc = tw_fix_decode_isa(isas[k], g.p, n, &d, &skip);
                if (rc != TW_FIX_INCOMPLETE)
                    fprintf(stderr, "golden %d prefix %zu (%s): rc %d\n", i, n,
                            tw_isa_name(isas[k]), rc);
                CHECK_EQ(rc, TW_FIX_INCOMPLETE);
            }
            guard_free(&g);
        }
}

/* All golden messages with junk between some, fed one byte at a time (and
 * then in random chunks) to the decoder as a stream: every message comes
 * out once, in order, decoded as the reference decodes it. */
static void feed(size_t (*chunk)(size_t), const char *what)
{
    static char stream[1 << 16], rx[1 << 16];
    static const char *junk[] = { "\n", "garbage 8=FIY", "\r\n", "8=FIX.4.2\0019=1", "88=F" };
    size_t sl = 0;
    for (int i = 0; i < ngold; i++) {
        if (i % 3 == 1) {
            const char *j = junk[i % TW_ARRAY_SIZE(junk)];
            memcpy(stream + sl, j, strlen(j));
            sl += strlen(j);
        }
        memcpy(stream + sl, gold[i].p, gold[i].len);
        sl += gold[i].len;
    }
    size_t fed = 0, head = 0, tail = 0;
    int got = 0;
    static tw_fix_md_entry ent[16];
    while (fed < sl) {
        size_t c = chunk(sl - fed);
        memcpy(rx + tail, stream + fed, c);
        tail += c;
        fed += c;
        for (;;) {
            tw_fix_decoded d = { .px_decimals = 8, .entries = ent, .entries_cap = 16 };
            size_t skip = 0;
            int rc = tw_fix_decode(rx + head, tail - head, &d, &skip);
            if (rc > 0) {
                CHECK(got < ngold);
                if (got < ngold) {
                    CHECK_EQ(rc, gold[got].len);
                    CHECK(memcmp(rx + head, gold[got].p, gold[got].len) == 0);
                    agree(tw_fix_isa_active(), rx + head, tail - head, 0, 8, 16, 512, 1, what);
                }
                got++;
                head += (size_t)rc;
            } else if (rc == TW_FIX_GARBLED) {
                CHECK(skip >= 1 && skip <= tail - head);
                head += skip;
            } else {
                break;
            }
        }
    }
    if (got != ngold)
        fprintf(stderr, "%s: decoded %d of %d\n", what, got, ngold);
    CHECK_EQ(got, ngold);
}

static size_t one_byte(size_t left)
{
    return left ? 1 : 0;
}

static size_t random_chunk(size_t left)
{
    size_t c = 1 + fix_rnd() % 97;
    return c < left ? c : left;
}

/* ---- random messages of the one-pass types ---------------------------------- */

/* Half the random messages are clean: every value from the first `ok`
 * entries of its list, which are valid at 8 decimals or more (so the
 * decoded paths get as much comparison as the error paths). */
static int clean;

static const char *pick(const char *const *a, size_t n, size_t ok)
{
    return a[fix_rnd() % (clean ? ok : n)];
}
#define PICK(a, ok) pick(a, TW_ARRAY_SIZE(a), ok)

static const char *const prices[] = {
    "172.35", "172.355", "1.08345", "100", "0", "-0.5", "0.00001", "99999999", "12345678",
    "1.2345678", "17.000000000", "-12.5", "00012.50", "0.1", "-0", "9.99",
    /* valid above, not always valid below */
    "100.0000000000001", "0.000012345678901234567", "5.", ".5", "1.2.3", "-", "1e5",
    "92233720368.54775807", "92233720369", "9007199254740993", "123456789012345678901234",
    "+1", "1,5",
};
static const char *const qtys[] = { "100", "0", "1000000", "750000.00", "123456789", "00", "7",
                                    "1.5", "-3", "x" };
static const char *const chars[] = { "1", "2", "F", "0", "8", "Y", "12" };
static const char *const times[] = { "20240315-14:30:00.123", "20240315-14:30:00.123456",
                                     "20240315-14:30:00", "20240315-14:30:00.12", "2024",
                                     "20241301-00:00:00" };
static const char *const strs[] = { "ORD-1", "AAPL", "EUR/USD", "x", "a=b", "V-7781903" };
static const char *const ints[] = { "1", "4711", "123456789", "0", "-5", "x1", "2147483648" };

/* Appends "tag=value|" for a random field of a one-pass type's vocabulary
 * (or the header's, or a stray tag). */
static size_t add_field(char *b, size_t n, unsigned tag)
{
    const char *v;
    switch (tag) {
    case 6: case 31: case 44: case 270: v = PICK(prices, 16); break;
    case 14: case 32: case 38: case 151: case 271: v = PICK(qtys, 7); break;
    case 20: case 39: case 40: case 54: case 59: case 150: case 21: case 269: case 279: v = PICK(chars, 6); break;
    case 52: case 60: case 122: v = PICK(times, 3); break;
    case 34: case 290: case 346: case 103: v = PICK(ints, 4); break;
    case 43: case 97: v = fix_rnd() % 4 || clean ? "Y" : fix_rnd() % 2 ? "N" : "y"; break;
    case 268: v = fix_rnd() % 8 || clean ? (const char *[]){ "0", "1", "2", "3", "5" }[fix_rnd() % 5] : "x"; break;
    default: v = PICK(strs, 6); break;
    }
    return n + (size_t)sprintf(b + n, "%u=%s|", tag, v);
}

static const unsigned er_tags[] = { 37, 11, 41, 17, 55, 1, 58, 150, 39, 54, 40, 59, 20, 38, 44,
                                    32, 31, 151, 14, 6, 60, 103, 30, 9999, 1137 };
static const unsigned no_tags[] = { 11, 55, 1, 54, 40, 59, 21, 38, 44, 60, 100, 18 };
static const unsigned x_entry_tags[] = { 269, 278, 55, 270, 271, 290, 346, 58, 272, 9999, 52 };

static size_t random_body(char *b, char type)
{
    size_t n = (size_t)sprintf(b, "35=%c|", type);
    /* The header, mostly complete and in front. */
    static const unsigned hdr[] = { 49, 56, 34, 52 };
    for (size_t i = 0; i < TW_ARRAY_SIZE(hdr); i++)
        if (fix_rnd() % (clean ? 200 : 16))
            n = add_field(b, n, hdr[i]);
    if (fix_rnd() % 4 == 0)
        n = add_field(b, n, 43);
    if (fix_rnd() % 8 == 0)
        n = add_field(b, n, 122);
    const unsigned *tags = type == '8' ? er_tags : no_tags;
    size_t nt = type == '8' ? TW_ARRAY_SIZE(er_tags) : TW_ARRAY_SIZE(no_tags);
    switch (type) {
    case '8':
    case 'D': {
        /* Most tags once in the usual order, some shuffled, repeated or left out. */
        for (size_t i = 0; i < nt; i++) {
            if (fix_rnd() % (clean ? 100 : 10) == 0)
                continue;
            n = add_field(b, n, fix_rnd() % (clean ? 100 : 12) == 0 ? tags[fix_rnd() % nt] : tags[i]);
            if (fix_rnd() % 20 == 0)
                n = add_field(b, n, tags[i]);
        }
        break;
    }
    case 'X': {
        if (fix_rnd() % 3)
            n = add_field(b, n, 262);
        if (fix_rnd() % 4 == 0)
            n = add_field(b, n, 55);
        unsigned k = fix_rnd() % 6;
        if (fix_rnd() % 10)
            n += (size_t)sprintf(b + n, "268=%u|", fix_rnd() % 12 == 0 ? k + 1 : k);
        for (unsigned e = 0; e < k; e++) {
            if (fix_rnd() % 20)
                n = add_field(b, n, 279);
            unsigned nf = fix_rnd() % 6;
            for (unsigned j = 0; j < nf; j++)
                n = add_field(b, n, x_entry_tags[fix_rnd() % TW_ARRAY_SIZE(x_entry_tags)]);
        }
        if (fix_rnd() % 4 == 0)
            n = add_field(b, n, fix_rnd() % 2 ? 58 : 34);
        break;
    }
    default: /* 0, 1 */
        if (fix_rnd() % 4)
            n = add_field(b, n, 112);
        if (fix_rnd() % 8 == 0)
            n = add_field(b, n, 112);
        if (fix_rnd() % 8 == 0)
            n = add_field(b, n, 58);
        break;
    }
    b[n] = 0;
    return n;
}

static void corrupt(char *b, size_t n)
{
    static const char p[] = { TW_FIX_SOH, '=', '0', '5', 'x', '.', (char)0x81 };
    unsigned k = 1 + fix_rnd() % 3;
    for (unsigned i = 0; i < k; i++)
        b[fix_rnd() % n] = p[fix_rnd() % sizeof(p)];
}

static void test_random(int iters)
{
    static char body[8192], msg[8400];
    static const char types[] = { '8', 'D', 'X', '0', '1' };
    for (int it = 0; it < iters && tw_check_failures < 10; it++) {
        char type = types[fix_rnd() % sizeof(types)];
        clean = it % 2 == 0;
        random_body(body, type);
        size_t n = mkmsg(msg, sizeof(msg), fix_rnd() % 2 ? "FIX.4.4" : "FIX.4.2", body);
        unsigned flags = 0;
        if (it % 6 == 1) {
            corrupt(msg, n);
            flags = fix_rnd() % 2 ? TW_FIX_NO_CHECKSUM : 0;
        }
        size_t len = it % 11 == 3 ? 1 + fix_rnd() % n : n;
        guard g = guard_alloc(msg, len);
        unsigned dec = clean ? 8 + 2 * (fix_rnd() % 2) : (unsigned[]){ 8, 2, 0, 10, 11, 18 }[fix_rnd() % 6];
        uint32_t ecap = fix_rnd() % 4 ? 64 : fix_rnd() % 4;
        uint32_t fcap = fix_rnd() % 4 ? 512 : 3 + fix_rnd() % 30;
        long before = decoded_ok;
        agree_all(g.p, len, flags, dec, ecap, fcap, "random");
        size_t ti = (size_t)((const char *)memchr(types, type, sizeof(types)) - types);
        random_n[ti]++;
        random_ok[ti] += decoded_ok > before;
        guard_free(&g);
    }
}

/* Messages longer than one classification window (4 KB) and with fields
 * that straddle 64-byte words and the window's end. */
static void test_long(void)
{
    static char body[20000], msg[20100];
    for (int it = 0; it < 40; it++) {
        size_t n = (size_t)sprintf(body, "35=X|49=V|56=T|34=9|52=20240315-14:30:00.123|262=R|");
        unsigned k = 40 + fix_rnd() % 160;
        n += (size_t)sprintf(body + n, "268=%u|", k);
        for (unsigned e = 0; e < k; e++)
            n += (size_t)sprintf(body + n, "279=0|269=2|55=SYM%u|278=%u|270=%u.%u|271=1|58=%.*s|",
                                 e, e, fix_rnd() % 1000, fix_rnd() % 100000, (int)(1 + fix_rnd() % 40),
                                 "padding padding padding padding padding.");
        size_t len = mkmsg(msg, sizeof(msg), "FIX.4.4", body);
        guard g = guard_alloc(msg, len);
        agree_all(g.p, len, 0, 8, 64, 512, "long X (entries over capacity)");
        guard_free(&g);
        static tw_fix_md_entry ent[256];
        tw_fix_decoded d = { .px_decimals = 8, .entries = ent, .entries_cap = 256 };
        size_t skip;
        CHECK_EQ(tw_fix_decode(msg, len, &d, &skip), len);
        CHECK_EQ(d.rc, 0);
        CHECK_EQ(d.u.md.n_entries, k);
        char want[32];
        snprintf(want, sizeof(want), "SYM%u", k - 1);
        CHECK_STR(ent[k - 1].symbol, want);
    }
}

/* ---- fields the walk's prediction and table must refuse or skip ----------------- */

/* Base messages of each one-pass type in the usual order ('|' for SOH), a
 * field at a time. */
static const char *const base_er[] = {
    "35=8", "49=VENUE", "56=TW", "34=4711", "52=20240315-14:30:00.123456", "37=V-1", "11=O-1",
    "17=E-1", "150=F", "39=1", "1=ACC", "55=AAPL", "54=1", "38=1000", "40=2", "44=172.35",
    "59=0", "32=100", "31=172.355", "151=700", "14=300", "6=172.355",
    "60=20240315-14:30:00.123400", "58=partial fill", NULL
};
static const char *const base_no[] = {
    "35=D", "49=TW", "56=VENUE", "34=7", "52=20240315-14:30:00.123", "11=O-1", "1=ACC", "21=1",
    "55=AAPL", "54=1", "60=20240315-14:30:00.123", "38=1000", "40=2", "44=172.35", "59=0", NULL
};
static const char *const base_x[] = {
    "35=X", "49=VENUE", "56=TW", "34=9", "52=20240315-14:30:00.123456", "262=R", "268=2",
    "279=0", "269=0", "278=Q1", "55=AAPL", "270=172.35", "271=100", "279=1", "269=1",
    "278=Q2", "55=AAPL", "270=172.36", "271=200", NULL
};
static const char *const base_tr[] = {
    "35=1", "49=VENUE", "56=TW", "34=3", "52=20240315-14:30:00.123", "112=T-1", NULL
};

/* Fields that look like the ones the walk expects and are not: tags of 8
 * or more digits that end in a tag the types read (a key taken from the
 * wrong bytes would match), tags with a NUL, a space or a leading zero,
 * empty tags and values, '=' in and at the end of a value. */
static const char *const odd_fields[] = {
    "1234567837=x", "1234567855=AAPL", "12345678=x", "123456789012345=1", "00037=x", "037=x",
    "3\0007=x", "\00037=x", "37 =x", " 37=x", "=x", "37=", "55=", "44=", "38=", "52=",
    "270=", "279=", "9999999=x", "10000000=x", "37==x", "58=a=b", "58=a=", "30=XNAS",
    "4\001=x", "1023=x", "10230=x", "102=x",
};

static size_t join(char *b, const char *const *f, size_t skip_at, const char *replace,
                   size_t replace_at)
{
    size_t n = 0;
    for (size_t i = 0; f[i]; i++) {
        if (i == skip_at)
            continue;
        const char *x = i == replace_at && replace ? replace : f[i];
        size_t l = strlen(x);
        memcpy(b + n, x, l);
        n += l;
        b[n++] = '|';
    }
    b[n] = 0;
    return n;
}

/* mkmsg for a body that may hold NULs (length given). */
static size_t mkmsg_n(char *out, const char *body, size_t bl)
{
    int h = sprintf(out, "8=FIX.4.4%c9=%zu%c", TW_FIX_SOH, bl, TW_FIX_SOH);
    for (size_t i = 0; i < bl; i++)
        out[h + (int)i] = body[i] == '|' ? TW_FIX_SOH : body[i];
    size_t n = (size_t)h + bl;
    unsigned sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += (unsigned char)out[i];
    n += (size_t)sprintf(out + n, "10=%03u%c", sum & 255, TW_FIX_SOH);
    return n;
}

static void odd_one(const char *body, size_t bl, const char *what)
{
    static char msg[1024];
    size_t len = mkmsg_n(msg, body, bl);
    guard g = guard_alloc(msg, len);
    agree_all(g.p, len, 0, 8, 64, 512, what);
    agree_all(g.p, len, TW_FIX_NO_CHECKSUM, 2, 1, 9, what);
    guard_free(&g);
}

static void test_odd_fields(void)
{
    static const char *const *const bases[] = { base_er, base_no, base_x, base_tr };
    static char body[1024];
    for (size_t b = 0; b < TW_ARRAY_SIZE(bases); b++) {
        const char *const *f = bases[b];
        size_t nf = 0;
        while (f[nf])
            nf++;
        /* As they are, without each field, each field emptied, an odd field
         * at each place (MsgType stays the first). */
        odd_one(body, join(body, f, SIZE_MAX, NULL, SIZE_MAX), "odd: base");
        for (size_t i = 1; i < nf; i++) {
            odd_one(body, join(body, f, i, NULL, SIZE_MAX), "odd: a field left out");
            char empty[16];
            const char *eq = strchr(f[i], '=');
            snprintf(empty, sizeof(empty), "%.*s=", (int)(eq - f[i]), f[i]);
            odd_one(body, join(body, f, SIZE_MAX, empty, i), "odd: a value emptied");
            for (size_t k = 0; k < TW_ARRAY_SIZE(odd_fields); k++) {
                const char *o = odd_fields[k];
                /* The two NUL-holding fields are measured past their NUL. */
                size_t ol = strlen(o);
                if (o[0] == 0)
                    ol = 1 + strlen(o + 1);
                else if (strncmp(o, "3\0007", 3) == 0)
                    ol = 1 + 1 + strlen(o + 2);
                char tmp[64];
                memcpy(tmp, o, ol);
                tmp[ol] = 0;
                size_t n = 0;
                for (size_t j = 0; f[j]; j++) {
                    if (j == i) {
                        memcpy(body + n, tmp, ol);
                        n += ol;
                        body[n++] = '|';
                    }
                    size_t l = strlen(f[j]);
                    memcpy(body + n, f[j], l);
                    n += l;
                    body[n++] = '|';
                }
                odd_one(body, n, "odd: a field inserted");
            }
        }
    }
}

/* ---- prices ------------------------------------------------------------------- */

/* Random decimals in FIX float form through an ExecutionReport's LastPx:
 * the float64 is tw_decimal_to_double's bit for bit; the fixed value the
 * accessor's; with TW_FIX_PX_F64 a price fixed point cannot hold keeps
 * its float64 and reads TW_FIX_PX_NONE. */
static void test_prices(int iters)
{
    char px[64], body[640], msg[800];
    for (int it = 0; it < iters; it++) {
        size_t n = 0;
        if (fix_rnd() % 4 == 0)
            px[n++] = '-';
        unsigned id = fix_rnd() % 4 == 0 ? 1 + fix_rnd() % 18 : 1 + fix_rnd() % 5;
        for (unsigned i = 0; i < id; i++)
            px[n++] = (char)('0' + (i == 0 && fix_rnd() % 2 ? 1 + fix_rnd() % 9 : fix_rnd() % 10));
        unsigned fd = fix_rnd() % 3 == 0 ? 0 : fix_rnd() % 5 == 0 ? 1 + fix_rnd() % 24 : 1 + fix_rnd() % 7;
        if (fd) {
            px[n++] = '.';
            for (unsigned i = 0; i < fd; i++)
                px[n++] = (char)('0' + fix_rnd() % 10);
        }
        px[n] = 0;
        snprintf(body, sizeof(body),
                 "35=8|49=V|56=T|34=1|52=20240315-14:30:00.123|37=O|17=E|150=F|39=2|55=S|54=1|"
                 "151=0|14=1|6=1|31=%s|",
                 px);
        size_t len = mkmsg(msg, sizeof(msg), "FIX.4.4", body);
        unsigned dec = (unsigned[]){ 8, 4, 0, 10, 12, 18 }[fix_rnd() % 6];
        agree_all(msg, len, 0, dec, 1, 64, "random price");
        double want;
        CHECK_EQ(tw_decimal_to_double(px, n, &want), 0);
        int64_t fx;
        int fx_rc = tw_fix_to_fixed(px, (uint32_t)n, dec, &fx);
        tw_fix_decoded d = { .flags = TW_FIX_PX_F64, .px_decimals = dec };
        size_t skip;
        CHECK_EQ(tw_fix_decode(msg, len, &d, &skip), len);
        CHECKF(d.rc == 0, "'%s' dec %u loose: rc %d", px, dec, d.rc);
        double got = d.u.exec_report.last_px_f64;
        CHECKF(memcmp(&got, &want, sizeof(got)) == 0, "'%s': %.17g, decimal.h says %.17g", px,
               got, want);
        if (fx_rc == 0)
            CHECK_EQ(d.u.exec_report.last_px, fx);
        else
            CHECK(d.u.exec_report.last_px == TW_FIX_PX_NONE);
        tw_fix_decoded s = { .px_decimals = dec };
        CHECK_EQ(tw_fix_decode(msg, len, &s, &skip), len);
        CHECK_EQ(s.rc, fx_rc == 0 ? 0 : -EBADMSG);
    }
    /* Shortest round-trip texts of random doubles (what a venue sends) come
     * back as the same double. */
    for (int it = 0; it < iters; it++) {
        uint64_t bits = ((uint64_t)fix_rnd() << 40) ^ ((uint64_t)fix_rnd() << 20) ^ fix_rnd();
        double x;
        bits = (bits & 0x800FFFFFFFFFFFFFull) | ((uint64_t)(1000 + fix_rnd() % 48) << 52);
        memcpy(&x, &bits, sizeof(x));
        char t[TW_DECIMAL_MAX];
        tw_double_to_decimal(x, t);
        snprintf(body, sizeof(body),
                 "35=X|49=V|56=T|34=1|52=20240315-14:30:00.123|262=R|268=1|279=0|269=2|55=S|"
                 "278=7|270=%s|271=1|",
                 t);
        size_t len = mkmsg(msg, sizeof(msg), "FIX.4.4", body);
        tw_fix_md_entry e[1];
        tw_fix_decoded d = { .flags = TW_FIX_PX_F64, .px_decimals = 8, .entries = e,
                             .entries_cap = 1 };
        size_t skip;
        CHECK_EQ(tw_fix_decode(msg, len, &d, &skip), len);
        CHECK_EQ(d.rc, 0);
        CHECKF(memcmp(&e[0].px_f64, &x, sizeof(x)) == 0, "'%s' read back as %.17g, not %.17g",
               t, e[0].px_f64, x);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s golden/messages.fix\n", argv[0]);
        return 2;
    }
    fix_rng = 0x6A09E667F3BCC909ull;
    ngold = load_golden(argv[1], gold, GOLDEN_MAX);
    CHECK(ngold == 19);
    /* Every one-pass type's tag hash finds its tags and only those. */
    extern int tw__fix_decode_tables_ok(void);
    CHECK(tw__fix_decode_tables_ok());
    test_golden();
    test_truncations();
    feed(one_byte, "byte by byte");
    feed(random_chunk, "random chunks");
    test_random(20000);
    test_odd_fields();
    test_long();
    test_prices(20000);
    for (int i = 0; i < ngold; i++)
        free(gold[i].p);
    printf("fix decode: %ld comparisons (%ld decoded); random messages decoded: 8 %ld/%ld, "
           "D %ld/%ld, X %ld/%ld, 0 %ld/%ld, 1 %ld/%ld; ISAs:",
           compared, decoded_ok, random_ok[0], random_n[0], random_ok[1], random_n[1],
           random_ok[2], random_n[2], random_ok[3], random_n[3], random_ok[4], random_n[4]);
    for (size_t k = 0; k < TW_ARRAY_SIZE(isas); k++)
        printf(" %s%s", tw_isa_name(isas[k]), tw_cpu_has(isas[k]) ? "" : "(absent)");
    printf("; active %s\n", tw_isa_name(tw_fix_isa_active()));
    return tw_check_done("fix decode");
}
