/* Stream framing: finds where one message ends in a byte stream and checks
 * BeginString, BodyLength and CheckSum before the parser looks at it. */
#include <errno.h>

#include "fix_internal.h"

static const char begin_prefix[] = "8=FIX";
#define BEGIN_PREFIX_LEN 5
/* "8=" + the longest BeginString ("FIXT.1.1", "FIX.4.4" + room) + SOH. */
#define BEGIN_MAX 20

/* Offset of the next place a message may start: the next "8=FIX" after
 * buf[0], or a tail of the buffer that is a prefix of it (kept, since the
 * rest may still arrive), or len. */
size_t tw__fix_resync(const char *buf, size_t len)
{
    for (size_t i = 1; i < len; i++) {
        const char *c = memchr(buf + i, '8', len - i);
        if (!c)
            return len;
        i = (size_t)(c - buf);
        size_t have = len - i < BEGIN_PREFIX_LEN ? len - i : BEGIN_PREFIX_LEN;
        if (memcmp(c, begin_prefix, have) == 0)
            return i;
    }
    return len;
}

/* Errors from the framer: only the error path formats a message. */
#define GARBLED(...)                                          \
    do {                                                      \
        *skip = tw__fix_resync(buf, len);                     \
        if (err)                                              \
            tw__err(err, -EBADMSG, __VA_ARGS__);              \
        return TW_FIX_GARBLED;                                \
    } while (0)

/* The value of the "10=nnn<SOH>" at buf[t..t+7), or -EBADMSG if it is not
 * one. */
static inline int trailer(const char *buf, size_t t)
{
    const char *p = buf + t;
    if (p[0] != '1' || p[1] != '0' || p[2] != '=' || p[6] != TW_FIX_SOH)
        return -EBADMSG;
    unsigned a = (unsigned char)p[3] - '0', b = (unsigned char)p[4] - '0',
             c = (unsigned char)p[5] - '0';
    if (a > 9 || b > 9 || c > 9)
        return -EBADMSG;
    return (int)(a * 100 + b * 10 + c);
}

int tw__fix_frame_head(const char *buf, size_t len, unsigned flags, size_t *skip, tw_error *err,
                       tw__fix_head *h)
{
    *skip = 0;
    if (len == 0)
        return TW_FIX_INCOMPLETE;
    /* BeginString: "8=FIX" then the version up to SOH.  The usual
     * "8=FIX.4.x<SOH>" is one 8-byte compare; the rest take the loop. */
    size_t e;
    if (TW_LIKELY(len >= 10) &&
        (tw__load64(buf + 2) & 0xFF00FFFFFFFFFFFFull) == 0x01002E342E584946ull &&
        (unsigned)(buf[8] - '0') < 10u && buf[0] == '8' && buf[1] == '=') {
        e = 9;
    } else {
        size_t have = len < BEGIN_PREFIX_LEN ? len : BEGIN_PREFIX_LEN;
        if (memcmp(buf, begin_prefix, have) != 0)
            GARBLED("message does not start with 8=FIX");
        size_t lim = len < BEGIN_MAX ? len : BEGIN_MAX;
        e = BEGIN_PREFIX_LEN;
        while (e < lim && buf[e] != TW_FIX_SOH)
            e++;
        if (e == lim) {
            if (len < BEGIN_MAX)
                return TW_FIX_INCOMPLETE;
            GARBLED("BeginString(8) has no SOH within %d bytes", BEGIN_MAX);
        }
    }
    /* BodyLength: "9=" digits SOH, the second field. */
    size_t p = e + 1;
    if (len < p + 2) {
        if (len > p && buf[p] != '9')
            GARBLED("BodyLength(9) is not the second field");
        return TW_FIX_INCOMPLETE;
    }
    if (buf[p] != '9' || buf[p + 1] != '=')
        GARBLED("BodyLength(9) is not the second field");
    size_t q = p + 2;
    uint32_t body_len = 0;
    size_t d = q;
    uint64_t w8;
    unsigned nk;
    if (TW_LIKELY(q + 8 <= len) &&
        (w8 = tw__load64(buf + q),
         nk = (unsigned)__builtin_ctzll((((w8 + 0x4646464646464646ull) |
                                          (w8 - 0x3030303030303030ull)) & TW__HIGHS) |
                                        (1ull << 63)) >> 3,
         nk != 0 && (unsigned char)(w8 >> (8 * nk)) == TW_FIX_SOH)) {
        /* 1 to 7 digits and SOH in one load (as a tag is found): the lowest
         * non-digit byte's flag is exact. */
        int ok = 1;
        body_len = (uint32_t)tw__swar_digits(w8, nk, &ok);
        d = q + nk;
    } else {
        for (; d < len && d < q + 8; d++) {
            unsigned c = (unsigned char)buf[d] - '0';
            if (c > 9)
                break;
            body_len = body_len * 10 + c;
        }
    }
    if (d == len)
        return TW_FIX_INCOMPLETE;
    if (d == q || buf[d] != TW_FIX_SOH)
        GARBLED("BodyLength(9) is not a number of at most 7 digits");
    if (body_len > TW_FIX_MAX_BODYLEN)
        GARBLED("BodyLength(9) %u is above the limit %u", body_len, TW_FIX_MAX_BODYLEN);
    size_t body = d + 1;
    /* MsgType must be the third field; checked on what has arrived so that
     * a stream of junk is rejected before its claimed length arrives. */
    static const char mt[] = "35=";
    size_t avail = len - body < 3 ? len - body : 3;
    if (TW_UNLIKELY(avail < 3 || buf[body] != '3' || buf[body + 1] != '5' || buf[body + 2] != '='))
        for (size_t i = 0; i < avail; i++)
            if (buf[body + i] != mt[i])
                GARBLED("MsgType(35) is not the third field");

    size_t t; /* offset of "10=" */
    if (!(flags & TW_FIX_NO_BODYLEN)) {
        t = body + body_len;
        if (len < t + 7)
            return TW_FIX_INCOMPLETE;
        if (body_len < 5 || buf[t - 1] != TW_FIX_SOH || trailer(buf, t) < 0)
            GARBLED("BodyLength(9) %u does not end where CheckSum(10) begins", body_len);
    } else {
        /* Frame on "<SOH>10=nnn<SOH>" (for logs whose lengths were
         * rewritten); BodyLength is then only a syntax check. */
        size_t k = body - 1; /* the SOH that ends BodyLength */
        for (;;) {
            if (k + 8 > len) {
                if (len - body > TW_FIX_MAX_BODYLEN + 7)
                    GARBLED("no CheckSum(10) within %u bytes", TW_FIX_MAX_BODYLEN);
                return TW_FIX_INCOMPLETE;
            }
            if (buf[k + 1] == '1' && buf[k + 2] == '0' && buf[k + 3] == '=')
                break;
            k += 1 + tw_fix_find_soh(buf + k + 1, len - k - 1);
        }
        t = k + 1;
        if (trailer(buf, t) < 0)
            GARBLED("CheckSum(10) is not three digits and SOH");
    }
    h->begin_end = e;
    h->bodylen_end = d;
    h->body = body;
    h->t = t;
    h->checksum = (unsigned)trailer(buf, t);
    return 0;
}

int tw__fix_bad_checksum(const char *buf, size_t len, const tw__fix_head *h, unsigned got,
                         size_t *skip, tw_error *err)
{
    GARBLED("CheckSum(10) is %03u but the bytes sum to %03u", h->checksum, got);
}

static inline int frame(const char *buf, size_t len, unsigned flags, size_t *skip,
                        tw_error *err)
{
    tw__fix_head h;
    int rc = tw__fix_frame_head(buf, len, flags, skip, err, &h);
    if (rc != 0)
        return rc;
    if (!(flags & TW_FIX_NO_CHECKSUM)) {
        unsigned got = tw_fix_checksum(buf, h.t);
        if (h.checksum != got)
            return tw__fix_bad_checksum(buf, len, &h, got, skip, err);
    }
    return (int)(h.t + 7);
}

int tw_fix_frame(const char *buf, size_t len, unsigned flags, size_t *skip)
{
    return frame(buf, len, flags, skip, NULL);
}

int tw_fix_frame_ex(const char *buf, size_t len, unsigned flags, size_t *skip, tw_error *err)
{
    return frame(buf, len, flags, skip, err);
}
