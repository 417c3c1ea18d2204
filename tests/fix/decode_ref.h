/* The reference the one-pass decoder (tw_fix_decode) is held to: the
 * four-call path it replaces (tw_fix_frame + tw_fix_parse +
 * tw_fix_read_header + the type's accessor), and the comparison of the
 * two.  Shared by tests/fix/test_fix_decode.c and the fuzz target
 * fuzz/fix/fuzz_fix_decode.c. */
#ifndef TW_TESTS_FIX_DECODE_REF_H
#define TW_TESTS_FIX_DECODE_REF_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tickwire/fix.h"

static tw_fix_kind ref_kind_of(const tw_fix_msg *m)
{
    static const char types[] = "01234589ADFVWXYh";
    static const tw_fix_kind kinds[] = {
        TW_FIX_K_HEARTBEAT,      TW_FIX_K_TEST_REQUEST, TW_FIX_K_RESEND_REQUEST,
        TW_FIX_K_REJECT,         TW_FIX_K_SEQUENCE_RESET, TW_FIX_K_LOGOUT,
        TW_FIX_K_EXEC_REPORT,    TW_FIX_K_CANCEL_REJECT, TW_FIX_K_LOGON,
        TW_FIX_K_NEW_ORDER,      TW_FIX_K_CANCEL_REQUEST, TW_FIX_K_MD_REQUEST,
        TW_FIX_K_MD_SNAPSHOT,    TW_FIX_K_MD_INCREMENTAL, TW_FIX_K_MD_REQUEST_REJECT,
        TW_FIX_K_TRADING_SESSION_STATUS,
    };
    if (m->msg_type_len != 1)
        return TW_FIX_K_OTHER;
    const char *c = memchr(types, m->msg_type[0], sizeof(types) - 1);
    return c ? kinds[c - types] : TW_FIX_K_OTHER;
}

typedef struct ref {
    int ret;
    size_t skip;
    int rc, parse_rc;
    tw_fix_kind kind;
    tw_fix_msg msg;
    tw_fix_header hdr;
    union {
        tw_fix_heartbeat hb;
        tw_fix_test_request tr;
        tw_fix_exec_report er;
        tw_fix_new_order no;
        tw_fix_md md;
        tw_fix_logon lo;
        tw_fix_md_request mr;
        tw_fix_trading_session_status ts;
        tw_fix_resend_request rr;
        tw_fix_reject rj;
        tw_fix_sequence_reset sr;
        tw_fix_logout lg;
        tw_fix_cancel_reject cj;
        tw_fix_cancel_request cq;
        tw_fix_md_request_reject mj;
        char raw[512];
    } u;
    tw_fix_md_entry ent[64];
    tw_fix_field fields[4096];
} ref;

/* 1 if the message's MsgType (the third field) is one the decoder reads in
 * one pass: without a field array those are never short of room, the
 * others parse into TW_FIX_DECODE_FIELDS. */
static int ref_one_pass_type(const char *buf, size_t len)
{
    const char *p = memmem(buf, len, "\00135=", 4);
    if (!p || p + 5 >= buf + len || p[5] != TW_FIX_SOH)
        return 0;
    return p[4] != 0 && strchr("018DX", p[4]) != NULL;
}

static void reference(const char *buf, size_t len, unsigned flags, unsigned dec, uint32_t ecap,
                      uint32_t fcap, ref *r)
{
    memset(r, 0, sizeof(*r));
    r->ret = tw_fix_frame(buf, len, flags & (TW_FIX_NO_CHECKSUM | TW_FIX_NO_BODYLEN), &r->skip);
    if (r->ret <= 0)
        return;
    if (fcap > 4096)
        fcap = 4096;
    r->msg = (tw_fix_msg){ .fields = r->fields, .cap = fcap };
    r->parse_rc = tw_fix_parse(buf, (size_t)r->ret, &r->msg);
    if (r->parse_rc != 0) {
        r->rc = r->parse_rc;
        return;
    }
    tw_fix_msg *m = &r->msg;
    r->kind = ref_kind_of(m);
    if (ecap > 64)
        ecap = 64;
    int rc = tw_fix_read_header(m, &r->hdr, NULL);
    if (rc == 0) {
        switch (r->kind) {
        case TW_FIX_K_HEARTBEAT: rc = tw_fix_read_heartbeat(m, &r->u.hb, NULL); break;
        case TW_FIX_K_TEST_REQUEST: rc = tw_fix_read_test_request(m, &r->u.tr, NULL); break;
        case TW_FIX_K_EXEC_REPORT: rc = tw_fix_read_exec_report(m, dec, &r->u.er, NULL); break;
        case TW_FIX_K_NEW_ORDER: rc = tw_fix_read_new_order(m, dec, &r->u.no, NULL); break;
        case TW_FIX_K_MD_INCREMENTAL:
            rc = tw_fix_read_md_incremental(m, dec, &r->u.md, r->ent, ecap, NULL);
            break;
        case TW_FIX_K_MD_SNAPSHOT:
            rc = tw_fix_read_md_snapshot(m, dec, &r->u.md, r->ent, ecap, NULL);
            break;
        case TW_FIX_K_LOGON: rc = tw_fix_read_logon(m, &r->u.lo, NULL); break;
        case TW_FIX_K_MD_REQUEST: rc = tw_fix_read_md_request(m, &r->u.mr, NULL); break;
        case TW_FIX_K_TRADING_SESSION_STATUS:
            rc = tw_fix_read_trading_session_status(m, &r->u.ts, NULL);
            break;
        case TW_FIX_K_RESEND_REQUEST: rc = tw_fix_read_resend_request(m, &r->u.rr, NULL); break;
        case TW_FIX_K_REJECT: rc = tw_fix_read_reject(m, &r->u.rj, NULL); break;
        case TW_FIX_K_SEQUENCE_RESET: rc = tw_fix_read_sequence_reset(m, &r->u.sr, NULL); break;
        case TW_FIX_K_LOGOUT: rc = tw_fix_read_logout(m, &r->u.lg, NULL); break;
        case TW_FIX_K_CANCEL_REJECT: rc = tw_fix_read_cancel_reject(m, &r->u.cj, NULL); break;
        case TW_FIX_K_CANCEL_REQUEST: rc = tw_fix_read_cancel_request(m, &r->u.cq, NULL); break;
        case TW_FIX_K_MD_REQUEST_REJECT:
            rc = tw_fix_read_md_request_reject(m, &r->u.mj, NULL);
            break;
        case TW_FIX_K_OTHER: rc = -ENOTSUP; break;
        }
    }
    r->rc = rc;
}

static size_t ref_body_size(tw_fix_kind k)
{
    switch (k) {
    case TW_FIX_K_HEARTBEAT: return sizeof(tw_fix_heartbeat);
    case TW_FIX_K_TEST_REQUEST: return sizeof(tw_fix_test_request);
    case TW_FIX_K_EXEC_REPORT: return sizeof(tw_fix_exec_report);
    case TW_FIX_K_NEW_ORDER: return sizeof(tw_fix_new_order);
    case TW_FIX_K_MD_INCREMENTAL:
    case TW_FIX_K_MD_SNAPSHOT: return sizeof(tw_fix_md);
    case TW_FIX_K_LOGON: return sizeof(tw_fix_logon);
    case TW_FIX_K_MD_REQUEST: return sizeof(tw_fix_md_request);
    case TW_FIX_K_TRADING_SESSION_STATUS: return sizeof(tw_fix_trading_session_status);
    case TW_FIX_K_RESEND_REQUEST: return sizeof(tw_fix_resend_request);
    case TW_FIX_K_REJECT: return sizeof(tw_fix_reject);
    case TW_FIX_K_SEQUENCE_RESET: return sizeof(tw_fix_sequence_reset);
    case TW_FIX_K_LOGOUT: return sizeof(tw_fix_logout);
    case TW_FIX_K_CANCEL_REJECT: return sizeof(tw_fix_cancel_reject);
    case TW_FIX_K_CANCEL_REQUEST: return sizeof(tw_fix_cancel_request);
    case TW_FIX_K_MD_REQUEST_REJECT: return sizeof(tw_fix_md_request_reject);
    default: return 0;
    }
}

/* tw_fix_decode with isa on buf[0..len) against the reference (computed
 * into *r); NULL if they agree, else what differs.  *decoded is set when
 * both decoded the message. */
static const char *ref_agree(tw_isa isa, const char *buf, size_t len, unsigned flags,
                             unsigned dec, uint32_t ecap, uint32_t fcap, int with_fields,
                             ref *r, int *decoded)
{
    static tw_fix_md_entry ent[64];
    static tw_fix_field fields[4096];
    if (ecap > 64)
        ecap = 64;
    if (fcap > 4096)
        fcap = 4096;
    uint32_t ref_cap = with_fields ? fcap : ref_one_pass_type(buf, len) ? 4096 : TW_FIX_DECODE_FIELDS;
    reference(buf, len, flags, dec, ecap, ref_cap, r);
    tw_fix_decoded d = { .flags = flags, .px_decimals = dec, .entries = ent, .entries_cap = ecap,
                         .fields = with_fields ? fields : NULL, .fields_cap = fcap };
    size_t skip = 12345;
    int ret = tw_fix_decode_isa(isa, buf, len, &d, &skip);
    *decoded = 0;
    if (ret != r->ret)
        return "return value";
    if (ret == TW_FIX_GARBLED && skip != r->skip)
        return "skip";
    if (ret <= 0)
        return NULL;
    if (d.rc != r->rc || d.parse_rc != r->parse_rc)
        return "rc or parse_rc";
    if (r->parse_rc == 0 && d.kind != r->kind)
        return "kind";
    if (d.rc == 0) {
        *decoded = 1;
        if (memcmp(&d.hdr, &r->hdr, sizeof(d.hdr)) != 0)
            return "header";
        if (memcmp(&d.u, &r->u, ref_body_size(d.kind)) != 0)
            return "body";
        if ((d.kind == TW_FIX_K_MD_INCREMENTAL || d.kind == TW_FIX_K_MD_SNAPSHOT) &&
            memcmp(ent, r->ent, d.u.md.n_entries * sizeof(ent[0])) != 0)
            return "entries";
    }
    if (with_fields && r->parse_rc == 0) {
        if (d.msg.count != r->msg.count || d.msg.msg_type != r->msg.msg_type ||
            d.msg.msg_type_len != r->msg.msg_type_len)
            return "views";
        for (uint32_t i = 0; i < r->msg.count; i++)
            if (fields[i].tag != r->fields[i].tag || fields[i].len != r->fields[i].len ||
                fields[i].val != r->fields[i].val)
                return "a field view";
    }
    return NULL;
}

#endif
