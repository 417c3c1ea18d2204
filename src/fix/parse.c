/* The parser: one pass over a framed message, SOH positions from a SIMD
 * bitmask per 64 bytes, tags parsed eight bytes at a time without a branch
 * per digit, values left where they are.  On CPUs with AVX-512 VBMI2 the
 * block parser in parse_avx512.c goes first and hands anything unusual
 * back to this one, which also writes every error message. */
#include <errno.h>

#include "fix_internal.h"

/* Detail for a field that failed; the error path only. */
static int field_error(const char *msg, size_t start, size_t end, uint32_t idx, tw_error *err)
{
    if (!err)
        return -EBADMSG;
    int flen = (int)(end - start);
    const char *eq = memchr(msg + start, '=', end - start);
    const char *why = !eq ? "has no '='"
                      : eq == msg + start ? "has an empty tag"
                      : eq == msg + end - 1 ? "has an empty value"
                      : "has a tag that is not a number of 1 to 7 digits without leading zero";
    return tw__err(err, -EBADMSG, "field %u at byte %zu ('%.*s') %s", idx + 1, start,
                   flen > 40 ? 40 : flen, msg + start, why);
}

/* One field [start, end) with its first eight bytes in w.  Fills *f and
 * returns 0, or -EBADMSG if the field is malformed. */
static inline __attribute__((always_inline)) int field(const char *msg, size_t start, size_t end,
                                                       uint64_t w, tw_fix_field *f)
{
    size_t flen = end - start;
    unsigned k;
    uint32_t tag;
    int ok = tw__fix_tag(w, flen, &k, &tag);
    f->tag = tag;
    f->len = (uint32_t)(flen - k - 1);
    f->val = msg + start + k + 1;
    return ok ? 0 : -EBADMSG;
}

static inline int parse(const char *msg, size_t len, tw_fix_msg *m, tw_error *err)
{
    tw_fix_field *f = m->fields;
    uint32_t cap = m->cap, count = 0;
    size_t start = 0;
    m->count = 0;
    m->msg_type = NULL;
    m->msg_type_len = 0;
    /* acquire: pairs with the release store in soh.c's choose_isa() */
    tw__fix_mask_fn soh_mask = __atomic_load_n(&tw__fix_soh_mask, __ATOMIC_ACQUIRE);
    for (size_t base = 0; base < len; base += 64) {
        size_t n = len - base < 64 ? len - base : 64;
        uint64_t mask = soh_mask(msg + base, n);
        if (TW_LIKELY(base + 64 + 8 <= len && cap - count >= 64)) {
            /* Every field that starts in this block has eight readable
             * bytes and room in the array (a block holds at most 64
             * fields): no bounds or capacity check per field. */
            while (mask) {
                size_t end = base + (size_t)__builtin_ctzll(mask);
                mask &= mask - 1;
                if (TW_UNLIKELY(field(msg, start, end, tw__load64(msg + start), &f[count]) != 0))
                    return field_error(msg, start, end, count, err);
                count++;
                start = end + 1;
            }
        } else {
            while (mask) {
                size_t end = base + (size_t)__builtin_ctzll(mask);
                mask &= mask - 1;
                if (TW_UNLIKELY(count == cap)) {
                    if (err)
                        tw__err(err, -E2BIG, "more than %u fields", cap);
                    return -E2BIG;
                }
                uint64_t w;
                if (start + 8 <= len) {
                    w = tw__load64(msg + start);
                } else {
                    /* The last few bytes: copy, never read past the message. */
                    char tmp[8] = { 0 };
                    memcpy(tmp, msg + start, len - start);
                    w = tw__load64(tmp);
                }
                if (TW_UNLIKELY(field(msg, start, end, w, &f[count]) != 0))
                    return field_error(msg, start, end, count, err);
                count++;
                start = end + 1;
            }
        }
    }
    m->count = count;
    if (start != len) {
        if (err)
            tw__err(err, -EBADMSG, "%zu bytes after the last SOH", len - start);
        return -EBADMSG;
    }
    /* MsgType is the third field of a framed message; anywhere else is
     * accepted for callers that parse unframed fragments. */
    uint32_t i = 2;
    if (count <= 2 || f[2].tag != 35)
        for (i = 0; i < count && f[i].tag != 35; i++)
            ;
    if (i >= count) {
        if (err)
            tw__err(err, -EBADMSG, "no MsgType(35)");
        return -EBADMSG;
    }
    m->msg_type = f[i].val;
    m->msg_type_len = f[i].len;
    return 0;
}

int tw__fix_parse_generic(const char *msg, size_t len, tw_fix_msg *m, tw_error *err)
{
    return parse(msg, len, m, err);
}

int tw_fix_parse(const char *msg, size_t len, tw_fix_msg *m)
{
    if (tw__fix_fast_parse && tw__fix_parse_avx512(msg, len, m) == 0)
        return 0;
    return parse(msg, len, m, NULL);
}

int tw_fix_parse_ex(const char *msg, size_t len, tw_fix_msg *m, tw_error *err)
{
    if (tw__fix_fast_parse && tw__fix_parse_avx512(msg, len, m) == 0)
        return 0;
    return parse(msg, len, m, err);
}

const tw_fix_field *tw_fix_get(const tw_fix_msg *m, uint32_t tag)
{
    for (uint32_t i = 0; i < m->count; i++)
        if (m->fields[i].tag == tag)
            return &m->fields[i];
    return NULL;
}

int tw_fix_find(const tw_fix_msg *m, uint32_t tag, uint32_t from)
{
    for (uint32_t i = from; i < m->count; i++)
        if (m->fields[i].tag == tag)
            return (int)i;
    return -ENOENT;
}

/* ---- repeating groups ---------------------------------------------------- */

static int is_member(const tw_fix_group_def *def, uint32_t tag)
{
    for (uint32_t i = 0; i < def->nmembers; i++)
        if (def->members[i] == tag)
            return 1;
    return 0;
}

int tw_fix_group_begin(tw_fix_group_iter *it, const tw_fix_msg *m,
                       const tw_fix_group_def *def, uint32_t from)
{
    it->m = m;
    it->def = def;
    it->count = 0;
    it->index = 0;
    it->pos = m->count;
    int i = tw_fix_find(m, def->count_tag, from);
    if (i < 0)
        return 0;
    int64_t n;
    if (tw_fix_to_i64(m->fields[i].val, m->fields[i].len, &n) != 0 || n < 0)
        return -EBADMSG;
    /* An entry holds at least one field, so a count above the fields left
     * is a lie that the iteration would find anyway; refuse it early. */
    if (n > (int64_t)(m->count - (uint32_t)i - 1))
        return -EBADMSG;
    if (n > 0 && m->fields[i + 1].tag != def->delim_tag)
        return -EBADMSG;
    it->count = (uint32_t)n;
    it->pos = (uint32_t)i + 1;
    return (int)n;
}

int tw_fix_group_next(tw_fix_group_iter *it, uint32_t *first, uint32_t *n)
{
    if (it->index == it->count)
        return 0;
    const tw_fix_msg *m = it->m;
    uint32_t p = it->pos;
    if (p >= m->count || m->fields[p].tag != it->def->delim_tag)
        return -EBADMSG;
    uint32_t j = p + 1;
    while (j < m->count && m->fields[j].tag != it->def->delim_tag &&
           is_member(it->def, m->fields[j].tag))
        j++;
    *first = p;
    *n = j - p;
    it->pos = j;
    it->index++;
    return 1;
}
