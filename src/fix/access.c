/* Typed accessors: one pass over the parsed fields per message, driven by
 * a per-message table (tag -> slot, decoder, offset) so that adding a field
 * is one line and the pass costs one table load per field. */
#include <errno.h>
#include <math.h>
#include <stddef.h>

#include "fix_internal.h"

enum kind { K_STR, K_CHAR, K_I64, K_I32, K_PX, K_QTY, K_TIME, K_BOOL };

typedef struct fdesc {
    uint16_t tag;
    uint8_t kind;
    uint8_t required;
    uint16_t off;
    uint16_t off_f64; /* K_PX: where its float64 goes */
} fdesc;

/* Tags below this go through the slot tables (every tag an accessor reads
 * is; the highest is DefaultApplVerID(1137)).  Tags at or above are
 * skipped without a lookup. */
#define SLOT_TAGS 1152

/* One line per field: tag, kind, required, member (and for a price the
 * member of its float64). */
#define F(t, k, r, type, member) { t, k, r, (uint16_t)offsetof(type, member), 0 }
#define FPX(t, r, type, member, member_f64)                                             \
    { t, K_PX, r, (uint16_t)offsetof(type, member), (uint16_t)offsetof(type, member_f64) }

/* -EBADMSG, with err (if any) naming the tag and what is wrong with it. */
static int bad(tw_error *err, const char *what, uint32_t tag, const tw_fix_field *f)
{
    if (!err)
        return -EBADMSG;
    const char *name = tw_fix_tag_name(tag);
    if (f)
        return tw__err(err, -EBADMSG, "%s(%u) has a bad value '%.*s'", name ? name : "tag", tag,
                       (int)(f->len > 40 ? 40 : f->len), f->val);
    return tw__err(err, -EBADMSG, "%s(%u) %s", name ? name : "tag", tag, what);
}

/* Decodes one value of the given kind into dst: 0, or the decoder's
 * -EINVAL / -ERANGE. */
static int decode(const tw_fix_field *f, unsigned kind, unsigned px_dec, void *dst, void *dst_f64)
{
    switch (kind) {
    case K_STR: {
        tw_fix_str s = { f->val, f->len, 0 };
        memcpy(dst, &s, sizeof(s));
        return 0;
    }
    case K_CHAR:
        /* Single-character enums; a longer value is not one of them. */
        if (f->len != 1)
            return -EINVAL;
        *(char *)dst = f->val[0];
        return 0;
    case K_I64:
        return tw_fix_to_i64(f->val, f->len, (int64_t *)dst);
    case K_I32: {
        int64_t v;
        int rc = tw_fix_to_i64(f->val, f->len, &v);
        if (rc != 0)
            return rc;
        if (v < INT32_MIN || v > INT32_MAX)
            return -ERANGE;
        *(int32_t *)dst = (int32_t)v;
        return 0;
    }
    case K_PX: {
        int64_t fx;
        double x;
        int rc = tw__fix_px(f->val, f->len, px_dec, &fx, &x);
        if (rc != 0)
            return rc; /* strict: a price must fit px_dec exactly */
        memcpy(dst, &fx, sizeof(fx));
        memcpy(dst_f64, &x, sizeof(x));
        return 0;
    }
    case K_QTY:
        return tw_fix_to_qty(f->val, f->len, (int64_t *)dst);
    case K_TIME:
        return tw_fix_to_epoch_ns(f->val, f->len, (int64_t *)dst);
    case K_BOOL:
        return tw_fix_to_bool(f->val, f->len, (int *)dst);
    default:
        TW_ASSERT(0); /* every descriptor has one of the kinds above */
        return -EINVAL;
    }
}

/* Fills out from the fields of m in [from, to) that d describes; the first
 * occurrence of a tag wins.  Checks the required ones.
 *
 * Two passes so that no branch depends on the order of fields in the
 * message: the first only notes where each wanted tag is (walking
 * backwards, so the first occurrence is written last), the second decodes
 * in the descriptor's fixed order, which the branch predictor learns; a
 * single pass that switched on each field's kind mispredicted about once
 * per field. */
static int fill(const tw_fix_msg *m, uint32_t from, uint32_t to, const fdesc *d, unsigned nd,
                const uint8_t *slot, unsigned px_dec, void *out, tw_error *err)
{
    TW_ASSERT(nd < 64);
    uint32_t at[64]; /* at[s + 1]: field index of slot s; at[0] takes the rest */
    for (unsigned s = 0; s <= nd; s++)
        at[s] = UINT32_MAX;
    const tw_fix_field *f = m->fields;
    for (uint32_t i = to; i-- > from;) {
        uint32_t tag = f[i].tag;
        at[tag < SLOT_TAGS ? slot[tag] : 0] = i;
    }
    for (unsigned s = 0; s < nd; s++) {
        uint32_t i = at[s + 1];
        if (i == UINT32_MAX) {
            if (d[s].required)
                return bad(err, "is required and missing", d[s].tag, NULL);
            continue;
        }
        if (TW_UNLIKELY(decode(&f[i], d[s].kind, px_dec, (char *)out + d[s].off,
                               (char *)out + d[s].off_f64) != 0))
            return bad(err, NULL, f[i].tag, &f[i]);
    }
    return 0;
}

/* 0 if m's MsgType is t, else -ENOMSG with err saying which it is. */
static int want_type(const tw_fix_msg *m, const char *t, tw_error *err)
{
    size_t n = strlen(t);
    if (m->msg_type_len == n && memcmp(m->msg_type, t, n) == 0)
        return 0;
    if (err)
        tw__err(err, -ENOMSG, "MsgType(35) is '%.*s', not '%s'",
                (int)(m->msg_type_len > 8 ? 8 : m->msg_type_len),
                m->msg_type ? m->msg_type : "", t);
    return -ENOMSG;
}

/* ---- header ---------------------------------------------------------------- */

static const fdesc hdr_d[] = {
    F(8, K_STR, 1, tw_fix_header, begin_string),
    F(35, K_STR, 1, tw_fix_header, msg_type),
    F(49, K_STR, 1, tw_fix_header, sender_comp_id),
    F(56, K_STR, 1, tw_fix_header, target_comp_id),
    F(34, K_I64, 1, tw_fix_header, msg_seq_num),
    F(52, K_TIME, 1, tw_fix_header, sending_time_ns),
    F(122, K_TIME, 0, tw_fix_header, orig_sending_time_ns),
    F(43, K_BOOL, 0, tw_fix_header, poss_dup),
    F(97, K_BOOL, 0, tw_fix_header, poss_resend),
};
static const uint8_t hdr_s[SLOT_TAGS] = { [8] = 1, [35] = 2, [49] = 3, [56] = 4, [34] = 5,
                                          [52] = 6, [122] = 7, [43] = 8, [97] = 9 };

int tw_fix_read_header(const tw_fix_msg *m, tw_fix_header *h, tw_error *err)
{
    memset(h, 0, sizeof(*h));
    return fill(m, 0, m->count, hdr_d, TW_ARRAY_SIZE(hdr_d), hdr_s, 0, h, err);
}

/* ---- session messages ----------------------------------------------------- */

static const fdesc logon_d[] = {
    F(98, K_I64, 1, tw_fix_logon, encrypt_method),
    F(108, K_I64, 1, tw_fix_logon, heart_bt_int_s),
    F(141, K_BOOL, 0, tw_fix_logon, reset_seq_num),
    F(553, K_STR, 0, tw_fix_logon, username),
    F(554, K_STR, 0, tw_fix_logon, password),
    F(1137, K_STR, 0, tw_fix_logon, default_appl_ver_id),
};
static const uint8_t logon_s[SLOT_TAGS] = { [98] = 1, [108] = 2, [141] = 3, [553] = 4,
                                            [554] = 5, [1137] = 6 };

int tw_fix_read_logon(const tw_fix_msg *m, tw_fix_logon *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "A", err);
    if (rc == 0)
        rc = fill(m, 0, m->count, logon_d, TW_ARRAY_SIZE(logon_d), logon_s, 0, o, err);
    if (rc != 0)
        return rc;
    if (o->heart_bt_int_s < 0)
        return bad(err, "is negative", 108, NULL);
    return 0;
}

static const fdesc hb_d[] = { F(112, K_STR, 0, tw_fix_heartbeat, test_req_id) };
static const fdesc tr_d[] = { F(112, K_STR, 1, tw_fix_test_request, test_req_id) };
static const uint8_t test_req_s[SLOT_TAGS] = { [112] = 1 };

int tw_fix_read_heartbeat(const tw_fix_msg *m, tw_fix_heartbeat *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "0", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, hb_d, 1, test_req_s, 0, o, err);
}

int tw_fix_read_test_request(const tw_fix_msg *m, tw_fix_test_request *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "1", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, tr_d, 1, test_req_s, 0, o, err);
}

static const fdesc rr_d[] = {
    F(7, K_I64, 1, tw_fix_resend_request, begin_seq_no),
    F(16, K_I64, 1, tw_fix_resend_request, end_seq_no),
};
static const uint8_t rr_s[SLOT_TAGS] = { [7] = 1, [16] = 2 };

int tw_fix_read_resend_request(const tw_fix_msg *m, tw_fix_resend_request *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "2", err);
    if (rc == 0)
        rc = fill(m, 0, m->count, rr_d, TW_ARRAY_SIZE(rr_d), rr_s, 0, o, err);
    if (rc != 0)
        return rc;
    if (o->begin_seq_no < 1)
        return bad(err, "is below 1", 7, NULL);
    if (o->end_seq_no < 0 || (o->end_seq_no != 0 && o->end_seq_no < o->begin_seq_no))
        return bad(err, "is below BeginSeqNo(7) and not 0", 16, NULL);
    return 0;
}

static const fdesc rej_d[] = {
    F(45, K_I64, 1, tw_fix_reject, ref_seq_num),
    F(371, K_I64, 0, tw_fix_reject, ref_tag_id),
    F(373, K_I64, 0, tw_fix_reject, session_reject_reason),
    F(372, K_STR, 0, tw_fix_reject, ref_msg_type),
    F(58, K_STR, 0, tw_fix_reject, text),
};
static const uint8_t rej_s[SLOT_TAGS] = { [45] = 1, [371] = 2, [373] = 3, [372] = 4, [58] = 5 };

int tw_fix_read_reject(const tw_fix_msg *m, tw_fix_reject *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    o->ref_tag_id = -1;
    o->session_reject_reason = -1;
    int rc = want_type(m, "3", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, rej_d, TW_ARRAY_SIZE(rej_d), rej_s, 0, o, err);
}

static const fdesc sr_d[] = {
    F(36, K_I64, 1, tw_fix_sequence_reset, new_seq_no),
    F(123, K_BOOL, 0, tw_fix_sequence_reset, gap_fill),
};
static const uint8_t sr_s[SLOT_TAGS] = { [36] = 1, [123] = 2 };

int tw_fix_read_sequence_reset(const tw_fix_msg *m, tw_fix_sequence_reset *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "4", err);
    if (rc == 0)
        rc = fill(m, 0, m->count, sr_d, TW_ARRAY_SIZE(sr_d), sr_s, 0, o, err);
    if (rc != 0)
        return rc;
    if (o->new_seq_no < 1)
        return bad(err, "is below 1", 36, NULL);
    return 0;
}

static const fdesc lo_d[] = { F(58, K_STR, 0, tw_fix_logout, text) };
static const uint8_t text_s[SLOT_TAGS] = { [58] = 1 };

int tw_fix_read_logout(const tw_fix_msg *m, tw_fix_logout *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "5", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, lo_d, 1, text_s, 0, o, err);
}

/* ---- order entry ---------------------------------------------------------- */

#define ER tw_fix_exec_report
static const fdesc er_d[] = {
    F(37, K_STR, 1, ER, order_id),      F(11, K_STR, 0, ER, cl_ord_id),
    F(41, K_STR, 0, ER, orig_cl_ord_id), F(17, K_STR, 1, ER, exec_id),
    F(55, K_STR, 1, ER, symbol),        F(1, K_STR, 0, ER, account),
    F(58, K_STR, 0, ER, text),          F(150, K_CHAR, 1, ER, exec_type),
    F(39, K_CHAR, 1, ER, ord_status),   F(54, K_CHAR, 1, ER, side),
    F(40, K_CHAR, 0, ER, ord_type),     F(59, K_CHAR, 0, ER, time_in_force),
    F(20, K_CHAR, 0, ER, exec_trans_type), F(38, K_QTY, 0, ER, order_qty),
    FPX(44, 0, ER, price, price_f64),   F(32, K_QTY, 0, ER, last_qty),
    FPX(31, 0, ER, last_px, last_px_f64), F(151, K_QTY, 1, ER, leaves_qty),
    F(14, K_QTY, 1, ER, cum_qty),       FPX(6, 1, ER, avg_px, avg_px_f64),
    F(60, K_TIME, 0, ER, transact_time_ns), F(103, K_I32, 0, ER, ord_rej_reason),
};
#undef ER
static const uint8_t er_s[SLOT_TAGS] = {
    [37] = 1,  [11] = 2,  [41] = 3,  [17] = 4,  [55] = 5,  [1] = 6,   [58] = 7,
    [150] = 8, [39] = 9,  [54] = 10, [40] = 11, [59] = 12, [20] = 13, [38] = 14,
    [44] = 15, [32] = 16, [31] = 17, [151] = 18, [14] = 19, [6] = 20, [60] = 21, [103] = 22,
};

int tw_fix_read_exec_report(const tw_fix_msg *m, unsigned px_decimals, tw_fix_exec_report *o,
                            tw_error *err)
{
    memset(o, 0, sizeof(*o));
    o->price_f64 = o->last_px_f64 = o->avg_px_f64 = NAN;
    o->ord_rej_reason = -1;
    int rc = want_type(m, "8", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, er_d, TW_ARRAY_SIZE(er_d), er_s, px_decimals, o, err);
}

#define CR tw_fix_cancel_reject
static const fdesc cr_d[] = {
    F(37, K_STR, 1, CR, order_id),      F(11, K_STR, 1, CR, cl_ord_id),
    F(41, K_STR, 1, CR, orig_cl_ord_id), F(58, K_STR, 0, CR, text),
    F(39, K_CHAR, 1, CR, ord_status),   F(434, K_CHAR, 1, CR, cxl_rej_response_to),
    F(102, K_I32, 0, CR, cxl_rej_reason),
};
#undef CR
static const uint8_t cr_s[SLOT_TAGS] = { [37] = 1, [11] = 2, [41] = 3, [58] = 4,
                                         [39] = 5, [434] = 6, [102] = 7 };

int tw_fix_read_cancel_reject(const tw_fix_msg *m, tw_fix_cancel_reject *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    o->cxl_rej_reason = -1;
    int rc = want_type(m, "9", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, cr_d, TW_ARRAY_SIZE(cr_d), cr_s, 0, o, err);
}

#define NO tw_fix_new_order
static const fdesc no_d[] = {
    F(11, K_STR, 1, NO, cl_ord_id),     F(55, K_STR, 1, NO, symbol),
    F(1, K_STR, 0, NO, account),        F(54, K_CHAR, 1, NO, side),
    F(40, K_CHAR, 1, NO, ord_type),     F(59, K_CHAR, 0, NO, time_in_force),
    F(21, K_CHAR, 0, NO, handl_inst),   F(38, K_QTY, 1, NO, order_qty),
    FPX(44, 0, NO, price, price_f64),   F(60, K_TIME, 0, NO, transact_time_ns),
};
#undef NO
static const uint8_t no_s[SLOT_TAGS] = { [11] = 1, [55] = 2, [1] = 3,  [54] = 4, [40] = 5,
                                         [59] = 6, [21] = 7, [38] = 8, [44] = 9, [60] = 10 };

int tw_fix_read_new_order(const tw_fix_msg *m, unsigned px_decimals, tw_fix_new_order *o,
                          tw_error *err)
{
    memset(o, 0, sizeof(*o));
    o->price_f64 = NAN;
    int rc = want_type(m, "D", err);
    if (rc == 0)
        rc = fill(m, 0, m->count, no_d, TW_ARRAY_SIZE(no_d), no_s, px_decimals, o, err);
    if (rc != 0)
        return rc;
    /* A limit order without a price cannot be sent on. */
    if ((o->ord_type == '2' || o->ord_type == '4') && tw_fix_find(m, 44, 0) < 0)
        return bad(err, "is required for a limit order and missing", 44, NULL);
    if (o->order_qty <= 0)
        return bad(err, "is not positive", 38, NULL);
    return 0;
}

#define CQ tw_fix_cancel_request
static const fdesc cq_d[] = {
    F(41, K_STR, 1, CQ, orig_cl_ord_id), F(11, K_STR, 1, CQ, cl_ord_id),
    F(37, K_STR, 0, CQ, order_id),      F(55, K_STR, 1, CQ, symbol),
    F(54, K_CHAR, 1, CQ, side),         F(38, K_QTY, 0, CQ, order_qty),
    F(60, K_TIME, 0, CQ, transact_time_ns),
};
#undef CQ
static const uint8_t cq_s[SLOT_TAGS] = { [41] = 1, [11] = 2, [37] = 3, [55] = 4,
                                         [54] = 5, [38] = 6, [60] = 7 };

int tw_fix_read_cancel_request(const tw_fix_msg *m, tw_fix_cancel_request *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "F", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, cq_d, TW_ARRAY_SIZE(cq_d), cq_s, 0, o, err);
}

/* ---- market data ------------------------------------------------------------ */

static const uint32_t md_entry_members[] = {
    269, 270, 271, 272, 273, 274, 275, 276, 277, 278, 282, 283, 284, 286, 287, 288, 289,
    290, 291, 292, 299, 336, 346, 15, 58, 1023, 432, 126, 110, 18, 59, 37, 1070, 625,
};
static const uint32_t md_inc_members[] = {
    279, 285, 269, 278, 280, 55, 65, 48, 22, 207, 270, 271, 272, 273, 274, 275, 276,
    277, 282, 283, 284, 286, 287, 288, 289, 290, 291, 292, 299, 336, 346, 15, 58,
    1023, 387, 451, 37, 59, 432, 126, 110, 18, 1070, 83, 625, 167, 200, 541,
};
static const uint32_t md_type_members[] = { 269 };
static const uint32_t related_sym_members[] = {
    55, 65, 48, 22, 207, 460, 167, 200, 541, 15, 336, 625, 106, 107, 231,
};

const tw_fix_group_def tw_fix_grp_md_entries = { 268, 269, md_entry_members,
                                                 TW_ARRAY_SIZE(md_entry_members), 0 };
const tw_fix_group_def tw_fix_grp_md_inc_entries = { 268, 279, md_inc_members,
                                                     TW_ARRAY_SIZE(md_inc_members), 0 };
const tw_fix_group_def tw_fix_grp_md_entry_types = { 267, 269, md_type_members, 1, 0 };
const tw_fix_group_def tw_fix_grp_related_sym = { 146, 55, related_sym_members,
                                                  TW_ARRAY_SIZE(related_sym_members), 0 };

/* The same member lists as tables for the W and X accessors (tags that
 * are not below SLOT_TAGS are not members of either). */
static const uint8_t md_entry_member_s[SLOT_TAGS] = {
    [269] = 1, [270] = 1, [271] = 1, [272] = 1, [273] = 1, [274] = 1, [275] = 1, [276] = 1,
    [277] = 1, [278] = 1, [282] = 1, [283] = 1, [284] = 1, [286] = 1, [287] = 1, [288] = 1,
    [289] = 1, [290] = 1, [291] = 1, [292] = 1, [299] = 1, [336] = 1, [346] = 1, [15] = 1,
    [58] = 1,  [1023] = 1, [432] = 1, [126] = 1, [110] = 1, [18] = 1, [59] = 1, [37] = 1,
    [1070] = 1, [625] = 1,
};
static const uint8_t md_inc_member_s[SLOT_TAGS] = {
    [279] = 1, [285] = 1, [269] = 1, [278] = 1, [280] = 1, [55] = 1,  [65] = 1,  [48] = 1,
    [22] = 1,  [207] = 1, [270] = 1, [271] = 1, [272] = 1, [273] = 1, [274] = 1, [275] = 1,
    [276] = 1, [277] = 1, [282] = 1, [283] = 1, [284] = 1, [286] = 1, [287] = 1, [288] = 1,
    [289] = 1, [290] = 1, [291] = 1, [292] = 1, [299] = 1, [336] = 1, [346] = 1, [15] = 1,
    [58] = 1,  [1023] = 1, [387] = 1, [451] = 1, [37] = 1, [59] = 1, [432] = 1, [126] = 1,
    [110] = 1, [18] = 1, [1070] = 1, [83] = 1, [625] = 1, [167] = 1, [200] = 1, [541] = 1,
};

#define MR tw_fix_md_request
static const fdesc mr_d[] = {
    F(262, K_STR, 1, MR, md_req_id),
    F(263, K_CHAR, 1, MR, subscription_request_type),
    F(264, K_I64, 1, MR, market_depth),
    F(265, K_CHAR, 0, MR, md_update_type),
};
#undef MR
static const uint8_t mr_s[SLOT_TAGS] = { [262] = 1, [263] = 2, [264] = 3, [265] = 4 };

static int group_error(tw_error *err, const tw_fix_group_def *g, const char *what)
{
    if (err)
        tw__err(err, -EBADMSG, "%s(%u) group: %s", tw_fix_tag_name(g->count_tag), g->count_tag,
                what);
    return -EBADMSG;
}

int tw_fix_read_md_request(const tw_fix_msg *m, tw_fix_md_request *o, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "V", err);
    if (rc != 0)
        return rc;
    /* Only the fields before the first group are body fields of V. */
    int g0 = tw_fix_find(m, 267, 0);
    int g1 = tw_fix_find(m, 146, 0);
    uint32_t body_end = m->count;
    if (g0 >= 0 && (uint32_t)g0 < body_end)
        body_end = (uint32_t)g0;
    if (g1 >= 0 && (uint32_t)g1 < body_end)
        body_end = (uint32_t)g1;
    rc = fill(m, 0, body_end, mr_d, TW_ARRAY_SIZE(mr_d), mr_s, 0, o, err);
    if (rc != 0)
        return rc;
    tw_fix_group_iter it;
    int n = tw_fix_group_begin(&it, m, &tw_fix_grp_md_entry_types, 0);
    if (n < 0)
        return group_error(err, &tw_fix_grp_md_entry_types, "bad count or first field");
    if (n == 0)
        return bad(err, "is required and missing", 267, NULL);
    if ((size_t)n > sizeof(o->entry_types))
        return group_error(err, &tw_fix_grp_md_entry_types, "more entries than 14");
    uint32_t first, cnt;
    int r;
    while ((r = tw_fix_group_next(&it, &first, &cnt)) == 1) {
        const tw_fix_field *f = &m->fields[first];
        if (f->len != 1)
            return bad(err, NULL, 269, f);
        o->entry_types[o->n_entry_types++] = f->val[0];
    }
    if (r < 0)
        return group_error(err, &tw_fix_grp_md_entry_types, "fewer entries than announced");
    n = tw_fix_group_begin(&it, m, &tw_fix_grp_related_sym, 0);
    if (n < 0)
        return group_error(err, &tw_fix_grp_related_sym, "bad count or first field");
    if (n == 0)
        return bad(err, "is required and missing", 146, NULL);
    while ((r = tw_fix_group_next(&it, &first, &cnt)) == 1)
        o->n_symbols++;
    if (r < 0)
        return group_error(err, &tw_fix_grp_related_sym, "fewer entries than announced");
    return 0;
}

#define ME tw_fix_md_entry
static const fdesc me_d[] = {
    F(55, K_STR, 0, ME, symbol),        F(278, K_STR, 0, ME, entry_id),
    F(279, K_CHAR, 0, ME, update_action), F(269, K_CHAR, 0, ME, entry_type),
    F(290, K_I32, 0, ME, position_no),  FPX(270, 0, ME, px, px_f64),
    F(271, K_QTY, 0, ME, size),         F(346, K_I64, 0, ME, number_of_orders),
};
#undef ME
static const uint8_t me_s[SLOT_TAGS] = { [55] = 1,  [278] = 2, [279] = 3, [269] = 4,
                                         [290] = 5, [270] = 6, [271] = 7, [346] = 8 };

static int read_md(const tw_fix_msg *m, unsigned px_dec, tw_fix_md *o, tw_fix_md_entry *e,
                   uint32_t cap, int incremental, tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, incremental ? "X" : "W", err);
    if (rc != 0)
        return rc;
    const tw_fix_group_def *g = incremental ? &tw_fix_grp_md_inc_entries : &tw_fix_grp_md_entries;
    int gi = tw_fix_find(m, 268, 0);
    uint32_t body_end = gi < 0 ? m->count : (uint32_t)gi;
    for (uint32_t i = 0; i < body_end; i++) {
        const tw_fix_field *f = &m->fields[i];
        tw_fix_str *dst = f->tag == 262 ? &o->md_req_id : f->tag == 55 ? &o->symbol : NULL;
        if (dst && dst->p == NULL) {
            dst->p = f->val;
            dst->len = f->len;
        }
    }
    if (!incremental && o->symbol.p == NULL)
        return bad(err, "is required and missing", 55, NULL);
    tw_fix_group_iter it;
    int n = tw_fix_group_begin(&it, m, g, 0);
    if (n < 0)
        return group_error(err, g, "bad count or first field");
    if (gi < 0)
        return bad(err, "is required and missing", 268, NULL);
    if ((uint32_t)n > cap) {
        if (err)
            tw__err(err, -E2BIG, "NoMDEntries(268) is %d, more than the %u entries given", n, cap);
        return -E2BIG;
    }
    /* The entries, as tw_fix_group_next() would give them, with the
     * member test a table load instead of a scan of the member list. */
    const uint8_t *member = incremental ? md_inc_member_s : md_entry_member_s;
    uint32_t p = it.pos;
    for (int k = 0; k < n; k++) {
        if (p >= m->count || m->fields[p].tag != g->delim_tag)
            return group_error(err, g, "fewer entries than announced");
        uint32_t first = p, j = p + 1;
        while (j < m->count && m->fields[j].tag != g->delim_tag && m->fields[j].tag < SLOT_TAGS &&
               member[m->fields[j].tag])
            j++;
        uint32_t cnt = j - p;
        p = j;
        tw_fix_md_entry *x = &e[o->n_entries];
        memset(x, 0, sizeof(*x));
        x->px_f64 = NAN;
        rc = fill(m, first, first + cnt, me_d, TW_ARRAY_SIZE(me_d), me_s, px_dec, x, err);
        if (rc != 0)
            return rc;
        if (x->symbol.p == NULL)
            x->symbol = o->symbol;
        if (!incremental && x->entry_type == 0)
            return bad(err, "is required in every entry and missing", 269, NULL);
        o->n_entries++;
    }
    return 0;
}

int tw_fix_read_md_snapshot(const tw_fix_msg *m, unsigned px_decimals, tw_fix_md *o,
                            tw_fix_md_entry *entries, uint32_t cap, tw_error *err)
{
    return read_md(m, px_decimals, o, entries, cap, 0, err);
}

int tw_fix_read_md_incremental(const tw_fix_msg *m, unsigned px_decimals, tw_fix_md *o,
                               tw_fix_md_entry *entries, uint32_t cap, tw_error *err)
{
    return read_md(m, px_decimals, o, entries, cap, 1, err);
}

/* ---- venue session status and rejects (live.md) --------------------------- */

#define TS tw_fix_trading_session_status
static const fdesc ts_d[] = {
    F(336, K_STR, 1, TS, trading_session_id), F(340, K_I32, 1, TS, trad_ses_status),
    F(335, K_STR, 0, TS, trad_ses_req_id),    F(58, K_STR, 0, TS, text),
};
#undef TS
static const uint8_t ts_s[SLOT_TAGS] = { [336] = 1, [340] = 2, [335] = 3, [58] = 4 };

int tw_fix_read_trading_session_status(const tw_fix_msg *m, tw_fix_trading_session_status *o,
                                       tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "h", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, ts_d, TW_ARRAY_SIZE(ts_d), ts_s, 0, o, err);
}

#define RJ tw_fix_md_request_reject
static const fdesc mrj_d[] = {
    F(262, K_STR, 1, RJ, md_req_id),
    F(281, K_CHAR, 0, RJ, md_req_rej_reason),
    F(58, K_STR, 0, RJ, text),
};
#undef RJ
static const uint8_t mrj_s[SLOT_TAGS] = { [262] = 1, [281] = 2, [58] = 3 };

int tw_fix_read_md_request_reject(const tw_fix_msg *m, tw_fix_md_request_reject *o,
                                  tw_error *err)
{
    memset(o, 0, sizeof(*o));
    int rc = want_type(m, "Y", err);
    if (rc != 0)
        return rc;
    return fill(m, 0, m->count, mrj_d, TW_ARRAY_SIZE(mrj_d), mrj_s, 0, o, err);
}

/* For tests: the member tables above say what the member lists say. */
int tw__fix_md_tables_consistent(void);
int tw__fix_md_tables_consistent(void)
{
    const struct {
        const tw_fix_group_def *g;
        const uint8_t *t;
    } pairs[] = { { &tw_fix_grp_md_entries, md_entry_member_s },
                  { &tw_fix_grp_md_inc_entries, md_inc_member_s } };
    for (size_t k = 0; k < TW_ARRAY_SIZE(pairs); k++)
        for (uint32_t tag = 0; tag < SLOT_TAGS; tag++) {
            int in = 0;
            for (uint32_t i = 0; i < pairs[k].g->nmembers; i++)
                in |= pairs[k].g->members[i] == tag;
            if (in != (pairs[k].t[tag] != 0))
                return 0;
        }
    return 1;
}
