/* libFuzzer target: the framer over the input as a byte stream, then the
 * parser, every typed accessor, the group iterators and the value decoders
 * on every message it frames.  The first byte picks the framer flags so
 * that checksum-off framing (where the fuzzer reaches the parser easily)
 * is covered too.  Bad input must come back as an error, never a crash,
 * an over-read or a hang. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fix/fix_internal.h"
#include "tickwire/fix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void decode_all(const tw_fix_msg *m)
{
    tw_fix_header h;
    tw_fix_logon a;
    tw_fix_heartbeat b;
    tw_fix_test_request c;
    tw_fix_resend_request d;
    tw_fix_reject e;
    tw_fix_sequence_reset f;
    tw_fix_logout g;
    tw_fix_exec_report er;
    tw_fix_cancel_reject cj;
    tw_fix_new_order no;
    tw_fix_cancel_request cq;
    tw_fix_md_request mr;
    tw_fix_md md;
    tw_fix_md_entry ent[16];
    tw_error err;
    (void)tw_fix_read_header(m, &h, &err);
    (void)tw_fix_read_logon(m, &a, &err);
    (void)tw_fix_read_heartbeat(m, &b, NULL);
    (void)tw_fix_read_test_request(m, &c, &err);
    (void)tw_fix_read_resend_request(m, &d, &err);
    (void)tw_fix_read_reject(m, &e, &err);
    (void)tw_fix_read_sequence_reset(m, &f, &err);
    (void)tw_fix_read_logout(m, &g, &err);
    /* Accessors that do not check MsgType first would be reached only by
     * a matching 35; calling each anyway is cheap and checks that. */
    (void)tw_fix_read_exec_report(m, 8, &er, &err);
    (void)tw_fix_read_cancel_reject(m, &cj, &err);
    (void)tw_fix_read_new_order(m, 4, &no, &err);
    (void)tw_fix_read_cancel_request(m, &cq, &err);
    (void)tw_fix_read_md_request(m, &mr, &err);
    (void)tw_fix_read_md_snapshot(m, 8, &md, ent, 16, &err);
    (void)tw_fix_read_md_incremental(m, 8, &md, ent, 16, &err);

    static const tw_fix_group_def *const groups[] = {
        &tw_fix_grp_md_entries, &tw_fix_grp_md_inc_entries, &tw_fix_grp_md_entry_types,
        &tw_fix_grp_related_sym,
    };
    for (size_t k = 0; k < sizeof(groups) / sizeof(groups[0]); k++) {
        tw_fix_group_iter it;
        if (tw_fix_group_begin(&it, m, groups[k], 0) <= 0)
            continue;
        uint32_t first, n, total = 0;
        while (tw_fix_group_next(&it, &first, &n) == 1) {
            if (first + n > m->count || n == 0)
                abort(); /* an entry outside the message is our bug */
            total += n;
        }
        if (total > m->count)
            abort();
    }
    for (uint32_t i = 0; i < m->count; i++) {
        const tw_fix_field *fl = &m->fields[i];
        int64_t v;
        int bv;
        (void)tw_fix_to_i64(fl->val, fl->len, &v);
        (void)tw_fix_to_fixed(fl->val, fl->len, i % 19, &v);
        (void)tw_fix_to_qty(fl->val, fl->len, &v);
        (void)tw_fix_to_epoch_ns(fl->val, fl->len, &v);
        (void)tw_fix_to_bool(fl->val, fl->len, &bv);
        (void)tw_fix_tag_name(fl->tag);
        (void)tw_fix_enum_name(fl->tag, fl->val, fl->len);
    }
}

/* The AVX-512 block parser and the generic one must agree on every input
 * (same code; same fields when it is 0). */
static void compare_paths(const char *p, size_t n, uint32_t cap)
{
    static tw_fix_field fa[256], fb[256];
    tw_fix_msg a = { .fields = fa, .cap = cap }, b = { .fields = fb, .cap = cap };
    int ra = tw_fix_parse(p, n, &a);
    int rb = tw__fix_parse_generic(p, n, &b, NULL);
    if (ra != rb)
        abort();
    if (ra == 0) {
        if (a.count != b.count || a.msg_type != b.msg_type || a.msg_type_len != b.msg_type_len)
            abort();
        for (uint32_t i = 0; i < a.count; i++)
            if (fa[i].tag != fb[i].tag || fa[i].len != fb[i].len || fa[i].val != fb[i].val)
                abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    /* The whole input as one unframed message, for the parser alone. */
    compare_paths((const char *)data + 1, size - 1, 1u + data[0] % 256u);
    unsigned flags = data[0] & 3u;
    const char *p = (const char *)data + 1;
    size_t left = size - 1;
    tw_fix_field fields[64];
    int rounds = 0;
    while (left > 0) {
        if (++rounds > 100000)
            abort(); /* the framer must make progress */
        size_t skip = 0;
        tw_error err;
        int rc = (rounds & 1) ? tw_fix_frame(p, left, flags, &skip)
                              : tw_fix_frame_ex(p, left, flags, &skip, &err);
        if (rc == TW_FIX_INCOMPLETE)
            break;
        if (rc == TW_FIX_GARBLED) {
            if (skip == 0 || skip > left)
                abort();
            p += skip;
            left -= skip;
            continue;
        }
        if (rc <= 0 || (size_t)rc > left)
            abort();
        compare_paths(p, (size_t)rc, 64);
        tw_fix_msg m = { .fields = fields, .cap = 64 };
        if (tw_fix_parse_ex(p, (size_t)rc, &m, &err) == 0) {
            if (m.count > 64 || !m.msg_type)
                abort();
            decode_all(&m);
        }
        p += rc;
        left -= (size_t)rc;
    }
    return 0;
}
