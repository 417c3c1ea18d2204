/* FIX builder: header templates and hand-written field formatting
 * (tickwire/fix_build.h).  No printf family anywhere on this path. */
#include <errno.h>
#include <string.h>

#include "tickwire/decimal.h"
#include "tickwire/fix.h"
#include "tickwire/fix_build.h"

void tw__fix_copy_long(char *dst, const char *src, size_t n)
{
    memcpy(dst, src, n);
}

static const char digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline size_t count_digits(uint64_t v)
{
    size_t n = 1;
    /* Bounded: at most 20 digits, four per step. */
    for (;;) {
        if (v < 10)
            return n;
        if (v < 100)
            return n + 1;
        if (v < 1000)
            return n + 2;
        if (v < 10000)
            return n + 3;
        v /= 10000;
        n += 4;
    }
}

static const uint32_t pow10_u32[10] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                         100000000, 1000000000 };

size_t tw_fix_fmt_u64(char *out, uint64_t v)
{
    if (TW_LIKELY(v < 100000000)) {
        /* Up to eight digits (sequence numbers, quantities, lengths): all
         * eight written as four pairs into one word, then shifted down past
         * the leading zeros and stored at once (out has room for 20). */
        unsigned bits = 64 - (unsigned)__builtin_clzll(v | 1);
        unsigned n = (bits * 1233) >> 12; /* floor(log10(2^bits)) */
        n += v >= pow10_u32[n];           /* now the number of digits */
        n += n == 0;
        uint32_t hi = (uint32_t)v / 10000, lo = (uint32_t)v % 10000;
        char b[8];
        memcpy(b, digit_pairs + 2 * (hi / 100), 2);
        memcpy(b + 2, digit_pairs + 2 * (hi % 100), 2);
        memcpy(b + 4, digit_pairs + 2 * (lo / 100), 2);
        memcpy(b + 6, digit_pairs + 2 * (lo % 100), 2);
        uint64_t x;
        memcpy(&x, b, 8);
        x >>= 8 * (8 - n) & 63;
        if (n == 8)
            memcpy(&x, b, 8);
        memcpy(out, &x, 8);
        return n;
    }
    size_t n = count_digits(v);
    char *p = out + n;
    /* Two digits per division halves the divides; written backwards into
     * place, the length being known. */
    while (v >= 100) {
        unsigned r = (unsigned)(v % 100);
        v /= 100;
        p -= 2;
        p[0] = digit_pairs[2 * r];
        p[1] = digit_pairs[2 * r + 1];
    }
    if (v >= 10) {
        p -= 2;
        p[0] = digit_pairs[2 * v];
        p[1] = digit_pairs[2 * v + 1];
    } else {
        *--p = (char)('0' + v);
    }
    TW_ASSERT(p == out);
    return n;
}

static inline void put2(char *p, unsigned v)
{
    p[0] = digit_pairs[2 * v];
    p[1] = digit_pairs[2 * v + 1];
}

/* Days since 1970-01-01 to a civil date (Howard Hinnant's algorithm):
 * exact for the whole int64 day range we accept, no tables, no loops. */
static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static void fmt_second(char *out, int64_t sec)
{
    int64_t days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
    unsigned sod = (unsigned)(sec - days * 86400);
    int64_t y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    /* FIX years are four digits; clamp rather than write garbage for
     * times outside 0000..9999 (only reachable from a broken clock). */
    if (y < 0)
        y = 0;
    if (y > 9999)
        y = 9999;
    put2(out, (unsigned)(y / 100));
    put2(out + 2, (unsigned)(y % 100));
    put2(out + 4, m);
    put2(out + 6, d);
    out[8] = '-';
    put2(out + 9, sod / 3600);
    out[11] = ':';
    put2(out + 12, sod / 60 % 60);
    out[14] = ':';
    put2(out + 15, sod % 60);
}

static size_t fmt_frac(char *out, int64_t epoch_ns, unsigned digits)
{
    if (digits == 0)
        return 0;
    int64_t ns = epoch_ns % 1000000000;
    if (ns < 0)
        ns += 1000000000;
    unsigned frac = (unsigned)ns;
    out[0] = '.';
    /* Three digits at a time: ms, then us, then ns, each only if wanted. */
    unsigned div = 1000000;
    for (unsigned g = 0; g < digits / 3; g++, div /= 1000) {
        unsigned v = frac / div % 1000;
        char *o = out + 1 + 3 * g;
        o[0] = (char)('0' + v / 100);
        o[1] = digit_pairs[2 * (v % 100)];
        o[2] = digit_pairs[2 * (v % 100) + 1];
    }
    return 1 + digits;
}

static int64_t floor_sec(int64_t ns)
{
    return ns >= 0 ? ns / 1000000000 : -((-ns + 999999999) / 1000000000);
}

size_t tw_fix_fmt_ts(char *out, int64_t epoch_ns, unsigned digits)
{
    if (digits != 3 && digits != 6 && digits != 9)
        digits = 0;
    fmt_second(out, floor_sec(epoch_ns));
    return 17 + fmt_frac(out + 17, epoch_ns, digits);
}

static int bad_id(const char *s)
{
    if (!s || !*s)
        return 1;
    for (; *s; s++)
        if (*s == '\x01' || *s == '=')
            return 1;
    return 0;
}

static int append(char *dst, uint32_t *len, size_t cap, const char *tag, const char *v)
{
    size_t tl = strlen(tag), vl = strlen(v);
    if (*len + tl + vl + 1 > cap)
        return -ENOBUFS;
    memcpy(dst + *len, tag, tl);
    memcpy(dst + *len + tl, v, vl);
    *len += (uint32_t)(tl + vl);
    dst[(*len)++] = '\x01';
    return 0;
}

int tw_fix_template_init(tw_fix_template *t, const char *begin_string,
                         const char *sender, const char *target,
                         const char *sender_sub, const char *target_sub,
                         unsigned ts_digits, tw_error *err)
{
    memset(t, 0, sizeof(*t));
    if (bad_id(begin_string) || strlen(begin_string) > TW_FIX_BEGIN_MAX - 2)
        return tw__err(err, -EINVAL, "fix template: bad BeginString");
    if (bad_id(sender) || bad_id(target))
        return tw__err(err, -EINVAL, "fix template: SenderCompID/TargetCompID empty or with SOH/'='");
    if ((sender_sub && bad_id(sender_sub)) || (target_sub && bad_id(target_sub)))
        return tw__err(err, -EINVAL, "fix template: bad sub ID");
    if (ts_digits != 0 && ts_digits != 3 && ts_digits != 6 && ts_digits != 9)
        return tw__err(err, -EINVAL, "fix template: SendingTime digits must be 0, 3, 6 or 9");
    if (append(t->begin, &t->begin_len, sizeof(t->begin), "8=", begin_string) != 0)
        return tw__err(err, -EINVAL, "fix template: BeginString too long");
    if (append(t->comp, &t->comp_len, sizeof(t->comp), "49=", sender) != 0 ||
        append(t->comp, &t->comp_len, sizeof(t->comp), "56=", target) != 0 ||
        (sender_sub && append(t->comp, &t->comp_len, sizeof(t->comp), "50=", sender_sub) != 0) ||
        (target_sub && append(t->comp, &t->comp_len, sizeof(t->comp), "57=", target_sub) != 0))
        return tw__err(err, -EINVAL, "fix template: comp IDs longer than %d bytes in all",
                       TW_FIX_TMPL_MAX);
    t->ts_digits = ts_digits;
    t->cached_sec = INT64_MIN;
    return 0;
}

size_t tw_fix_build_reserve(const tw_fix_template *t)
{
    return t->begin_len + 2 + TW_FIX_BODYLEN_DIGITS + 1;
}

static inline int room(tw_fix_wbuf *w, size_t n)
{
    if (TW_UNLIKELY(w->overflow || w->cap - w->pos < n)) {
        w->overflow = 1;
        return 0;
    }
    return 1;
}

/* "tag=" for a tag only known at run time (the inline path folds constant
 * tags with tw__fix_tag_text); returns its length.  Pairs of digits from
 * the table rather than divisions by 10. */
static inline size_t fmt_tag(char *t, uint32_t tag)
{
    if (tag < 10) {
        t[0] = (char)('0' + tag);
        t[1] = '=';
        return 2;
    }
    if (tag < 100) {
        memcpy(t, digit_pairs + 2 * tag, 2);
        t[2] = '=';
        return 3;
    }
    if (tag < 1000) {
        t[0] = (char)('0' + tag / 100);
        memcpy(t + 1, digit_pairs + 2 * (tag % 100), 2);
        t[3] = '=';
        return 4;
    }
    size_t n = tw_fix_fmt_u64(t, tag);
    t[n] = '=';
    return n + 1;
}

/* Writes "tag=" + v[0..len) + SOH if it fits exactly (room checks are
 * exact so that a buffer sized to the message is enough).  The common case,
 * with room to spare for the longest tag, writes the tag in place. */
void tw__fix_put_field(tw_fix_wbuf *w, uint32_t tag, const char *v, size_t len)
{
    if (TW_LIKELY(!w->overflow && w->cap - w->pos >= len + 12)) {
        char *p = w->buf + w->pos;
        size_t tl = fmt_tag(p, tag);
        tw__fix_copy(p + tl, v, len);
        p[tl + len] = '\x01';
        w->pos += tl + len + 1;
        return;
    }
    char t[12];
    size_t tl = fmt_tag(t, tag);
    if (!room(w, tl + len + 1))
        return;
    char *p = w->buf + w->pos;
    memcpy(p, t, tl);
    memcpy(p + tl, v, len);
    p[tl + len] = '\x01';
    w->pos += tl + len + 1;
}

void tw_fix_build_begin_raw(tw_fix_wbuf *w, tw_fix_template *t, char *buf, size_t cap,
                            const char *msg_type)
{
    w->buf = buf;
    w->cap = cap;
    w->t = t;
    w->overflow = 0;
    w->body_off = tw_fix_build_reserve(t);
    w->pos = w->body_off;
    if (cap < w->body_off) {
        w->overflow = 1;
        w->pos = cap;
        return;
    }
    /* MsgType is one or two characters at nearly every call. */
    if (msg_type[0] && !msg_type[1])
        tw_fix_put_char(w, 35, msg_type[0]);
    else
        tw_fix_put_cstr(w, 35, msg_type);
    if (room(w, t->comp_len)) {
        tw__fix_copy(w->buf + w->pos, t->comp, t->comp_len);
        w->pos += t->comp_len;
    }
}

void tw_fix_build_begin(tw_fix_wbuf *w, tw_fix_template *t, char *buf, size_t cap,
                        const char *msg_type, uint64_t seq, int64_t sending_time_ns)
{
    tw_fix_build_begin_raw(w, t, buf, cap, msg_type);
    tw_fix_put_u64(w, 34, seq);
    tw_fix_put_ts(w, 52, sending_time_ns, t->ts_digits);
}

void tw__fix_put_u64_slow(tw_fix_wbuf *w, uint32_t tag, uint64_t v)
{
    char d[20];
    tw__fix_put_field(w, tag, d, tw_fix_fmt_u64(d, v));
}

void tw__fix_put_i64_slow(tw_fix_wbuf *w, uint32_t tag, int64_t v)
{
    char d[21];
    uint64_t u = (uint64_t)v;
    size_t n = 0;
    if (v < 0) {
        d[n++] = '-';
        u = 0 - u; /* well defined for INT64_MIN too */
    }
    n += tw_fix_fmt_u64(d + n, u);
    tw__fix_put_field(w, tag, d, n);
}

void tw__fix_put_fixed_slow(tw_fix_wbuf *w, uint32_t tag, int64_t mantissa, unsigned decimals)
{
    if (decimals > 18) {
        w->overflow = 1; /* no int64 has that many fraction digits */
        return;
    }
    char d[48];
    size_t n = 0;
    uint64_t u = (uint64_t)mantissa;
    if (mantissa < 0) {
        d[n++] = '-';
        u = 0 - u;
    }
    uint64_t scale = 1;
    for (unsigned k = 0; k < decimals; k++)
        scale *= 10;
    n += tw_fix_fmt_u64(d + n, u / scale);
    if (decimals > 0) {
        uint64_t frac = u % scale;
        d[n++] = '.';
        /* Right to left, two digits per step, zeros kept to `decimals`. */
        unsigned k = decimals;
        for (; k >= 2; k -= 2) {
            put2(d + n + k - 2, (unsigned)(frac % 100));
            frac /= 100;
        }
        if (k)
            d[n] = (char)('0' + frac % 10);
        n += decimals;
    }
    tw__fix_put_field(w, tag, d, n);
}

void tw_fix_put_f64(tw_fix_wbuf *w, uint32_t tag, double x)
{
    if (TW_UNLIKELY(x - x != 0)) { /* NaN or an infinity */
        w->overflow = 1;
        return;
    }
    /* The digits go straight into the message (tw_decimal_put is the
     * bounded writer for builders); "tag=" first, SOH after. */
    char t[16];
    size_t tl = fmt_tag(t, tag);
    if (!room(w, tl + 2))
        return;
    size_t left = w->cap - w->pos - tl - 1;
    int n = tw_decimal_put(x, w->buf + w->pos + tl, left);
    if (n < 0) {
        w->overflow = 1;
        return;
    }
    memcpy(w->buf + w->pos, t, tl);
    w->buf[w->pos + tl + (size_t)n] = '\x01';
    w->pos += tl + (size_t)n + 1;
}

void tw__fix_put_ts_slow(tw_fix_wbuf *w, uint32_t tag, int64_t epoch_ns, unsigned digits)
{
    if (digits != 3 && digits != 6 && digits != 9)
        digits = 0;
    int64_t sec = floor_sec(epoch_ns);
    tw_fix_template *t = w->t;
    if (t->cached_sec != sec) {
        fmt_second(t->cached_ts, sec);
        t->cached_sec = sec;
    }
    char d[28];
    memcpy(d, t->cached_ts, 17);
    size_t n = 17 + fmt_frac(d + 17, epoch_ns, digits);
    tw__fix_put_field(w, tag, d, n);
}

void tw_fix_put_raw(tw_fix_wbuf *w, const char *fields, size_t len)
{
    if (!room(w, len))
        return;
    memcpy(w->buf + w->pos, fields, len);
    w->pos += len;
}

int tw_fix_build_end(tw_fix_wbuf *w, const char **msg, size_t *len)
{
    if (!room(w, 7))
        return -ENOBUFS;
    size_t body_len = w->pos - w->body_off;
    if (body_len > 999999)
        return -ENOBUFS;
    /* "8=<begin><SOH>9=<len><SOH>", right-aligned in front of the body:
     * the length's digits first, as the last bytes of a word that ends at
     * its SOH.  The bytes before them in that word land where BeginString
     * and "9=" go, which are written over them next, or (a BeginString
     * shorter than 6) in the reserve before the message's start: inside
     * buf, since the reserve alone is 9 or more bytes. */
    _Static_assert(2 + TW_FIX_BODYLEN_DIGITS + 1 >= 9, "the word store needs 9 reserved bytes");
    uint64_t z = tw__fix_digits8((uint32_t)body_len);
    unsigned lz = tw__fix_lead0(z), nd = 8 - lz;
    size_t start = w->body_off - (w->t->begin_len + 2 + nd + 1);
    TW_ASSERT(w->body_off >= 9 && start < w->body_off);
    /* z holds the digits as the last nd of its eight bytes already. */
    uint64_t digs = z | 0x3030303030303030ull;
    memcpy(w->buf + w->body_off - 9, &digs, 8);
    char *p = w->buf + start;
    tw__fix_copy(p, w->t->begin, w->t->begin_len);
    p += w->t->begin_len;
    p[0] = '9';
    p[1] = '=';
    w->buf[w->body_off - 1] = '\x01';
    TW_ASSERT(p + 2 + nd + 1 == w->buf + w->body_off);
    /* CheckSum: byte sum mod 256 of everything before "10=". */
    unsigned sum = tw_fix_checksum(w->buf + start, w->pos - start);
    uint64_t c = tw__fix_digits4(sum) | 0x30303030u; /* the three digits in bytes 1..3 */
    uint64_t tr = 0x3D3031ull | (c >> 8 << 24) | 0x01ull << 48; /* "10=ddd" SOH */
    char *q = w->buf + w->pos;
    if (w->cap - w->pos >= 8) {
        memcpy(q, &tr, 8);
    } else {
        memcpy(q, &tr, 4);
        memcpy(q + 4, (const char *)&tr + 4, 3);
    }
    w->pos += 7;
    *msg = w->buf + start;
    *len = w->pos - start;
    return 0;
}
