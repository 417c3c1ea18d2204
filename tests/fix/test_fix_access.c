/* Typed accessors and repeating groups on the golden messages (every
 * message type fix.md lists), then broken variants: a missing required
 * field, a bad value, a wrong MsgType, a group count that lies.
 * Usage: test_fix_access tests/fix/golden/messages.fix */
#include "fix_test.h"

#define PX TW_FIX_PX_DECIMALS
#define NS(s) ((int64_t)(s) * 1000000000ll)

static golden gold[GOLDEN_MAX];
static tw_fix_field fields[256];

static tw_fix_msg parse_golden(int i)
{
    tw_fix_msg m = { .fields = fields, .cap = 256 };
    size_t skip;
    CHECK_EQ(tw_fix_frame(gold[i].p, gold[i].len, 0, &skip), gold[i].len);
    CHECK_EQ(tw_fix_parse(gold[i].p, gold[i].len, &m), 0);
    return m;
}

static tw_fix_msg parse_body(char *buf, size_t cap, const char *body)
{
    size_t n = mkmsg(buf, cap, "FIX.4.4", body);
    tw_fix_msg m = { .fields = fields, .cap = 256 };
    size_t skip;
    CHECK_EQ(tw_fix_frame(buf, n, 0, &skip), n);
    CHECK_EQ(tw_fix_parse(buf, n, &m), 0);
    return m;
}

static void test_session_messages(void)
{
    tw_error err;
    tw_fix_msg m = parse_golden(0);
    tw_fix_header h;
    CHECK_EQ(tw_fix_read_header(&m, &h, &err), 0);
    CHECK_STR(h.begin_string, "FIX.4.2");
    CHECK_STR(h.msg_type, "A");
    CHECK_STR(h.sender_comp_id, "SERVER");
    CHECK_STR(h.target_comp_id, "CLIENT");
    CHECK_EQ(h.msg_seq_num, 177);
    CHECK_EQ(h.sending_time_ns, NS(1231352116));
    CHECK_EQ(h.poss_dup, 0);
    tw_fix_logon lo;
    CHECK_EQ(tw_fix_read_logon(&m, &lo, &err), 0);
    CHECK_EQ(lo.encrypt_method, 0);
    CHECK_EQ(lo.heart_bt_int_s, 30);
    CHECK_EQ(lo.reset_seq_num, 0);

    m = parse_golden(14);
    CHECK_EQ(tw_fix_read_logon(&m, &lo, &err), 0);
    CHECK_EQ(lo.reset_seq_num, 1);
    CHECK_STR(lo.username, "alice");
    CHECK_STR(lo.password, "s3cret");
    CHECK_EQ(tw_fix_read_header(&m, &h, &err), 0);
    CHECK_EQ(h.sending_time_ns, NS(1710493200));

    m = parse_golden(2);
    tw_fix_heartbeat hb;
    CHECK_EQ(tw_fix_read_heartbeat(&m, &hb, &err), 0);
    CHECK_STR(hb.test_req_id, "TEST42");
    m = parse_golden(3);
    tw_fix_test_request tr;
    CHECK_EQ(tw_fix_read_test_request(&m, &tr, &err), 0);
    CHECK_STR(tr.test_req_id, "TEST42");
    CHECK_EQ(tw_fix_read_heartbeat(&m, &hb, &err), -ENOMSG); /* it is a 1, not a 0 */
    CHECK(strstr(err.msg, "MsgType") != NULL);

    m = parse_golden(4);
    tw_fix_resend_request rr;
    CHECK_EQ(tw_fix_read_resend_request(&m, &rr, &err), 0);
    CHECK_EQ(rr.begin_seq_no, 5);
    CHECK_EQ(rr.end_seq_no, 0);

    m = parse_golden(5);
    tw_fix_reject rj;
    CHECK_EQ(tw_fix_read_reject(&m, &rj, &err), 0);
    CHECK_EQ(rj.ref_seq_num, 7);
    CHECK_EQ(rj.ref_tag_id, 44);
    CHECK_EQ(rj.session_reject_reason, 5);
    CHECK_STR(rj.ref_msg_type, "D");
    CHECK_STR(rj.text, "Price out of range");

    m = parse_golden(6);
    tw_fix_sequence_reset sr;
    CHECK_EQ(tw_fix_read_sequence_reset(&m, &sr, &err), 0);
    CHECK_EQ(sr.new_seq_no, 12);
    CHECK_EQ(sr.gap_fill, 1);
    CHECK_EQ(tw_fix_read_header(&m, &h, &err), 0);
    CHECK_EQ(h.poss_dup, 1);
    CHECK_EQ(h.orig_sending_time_ns, NS(1710513000) - NS(1));

    m = parse_golden(7);
    tw_fix_logout lg;
    CHECK_EQ(tw_fix_read_logout(&m, &lg, &err), 0);
    CHECK_STR(lg.text, "End of day");
}

static void test_order_messages(void)
{
    tw_error err = { 0 };
    tw_fix_exec_report er;
    /* Wikipedia's example has neither OrderID nor ExecID: the accessor says so. */
    tw_fix_msg m = parse_golden(1);
    CHECK_EQ(tw_fix_read_exec_report(&m, PX, &er, &err), -EBADMSG);
    CHECK(strstr(err.msg, "OrderID(37)") != NULL);

    m = parse_golden(16);
    CHECK_EQ(tw_fix_read_exec_report(&m, PX, &er, &err), 0);
    CHECK_STR(er.order_id, "V-1");
    CHECK_STR(er.cl_ord_id, "ORD-1");
    CHECK_STR(er.exec_id, "E-1");
    CHECK_STR(er.symbol, "EUR/USD");
    CHECK_STR(er.account, "ACC-9");
    CHECK_EQ(er.exec_type, 'F');
    CHECK_EQ(er.ord_status, '1');
    CHECK_EQ(er.side, '2');
    CHECK_EQ(er.ord_type, '2');
    CHECK_EQ(er.order_qty, 1000000);
    CHECK_EQ(er.price, 108345000);
    CHECK_EQ(er.last_qty, 250000);
    CHECK_EQ(er.last_px, 108346000);
    CHECK_EQ(er.leaves_qty, 750000);
    CHECK_EQ(er.cum_qty, 250000);
    CHECK_EQ(er.avg_px, 108346000);
    CHECK_EQ(er.transact_time_ns, NS(1710493200) + 999000);

    m = parse_golden(8);
    tw_fix_cancel_reject cj;
    CHECK_EQ(tw_fix_read_cancel_reject(&m, &cj, &err), 0);
    CHECK_STR(cj.order_id, "OID-77");
    CHECK_STR(cj.cl_ord_id, "C-1002");
    CHECK_STR(cj.orig_cl_ord_id, "C-1001");
    CHECK_EQ(cj.ord_status, '8');
    CHECK_EQ(cj.cxl_rej_response_to, '1');
    CHECK_EQ(cj.cxl_rej_reason, 1);

    m = parse_golden(9);
    tw_fix_new_order no;
    CHECK_EQ(tw_fix_read_new_order(&m, PX, &no, &err), 0);
    CHECK_STR(no.cl_ord_id, "C-1001");
    CHECK_STR(no.symbol, "AAPL");
    CHECK_EQ(no.side, '1');
    CHECK_EQ(no.ord_type, '2');
    CHECK_EQ(no.handl_inst, '1');
    CHECK_EQ(no.time_in_force, '0');
    CHECK_EQ(no.order_qty, 100);
    CHECK_EQ(no.price, 17235000000ll);
    CHECK_EQ(no.transact_time_ns, NS(1710513000) + 123000000);
    CHECK_EQ(tw_fix_read_new_order(&m, 2, &no, &err), 0);
    CHECK_EQ(no.price, 17235);

    m = parse_golden(15);
    CHECK_EQ(tw_fix_read_new_order(&m, PX, &no, &err), 0);
    CHECK_STR(no.symbol, "EUR/USD");
    CHECK_STR(no.account, "ACC-9");
    CHECK_EQ(no.order_qty, 1000000);
    CHECK_EQ(no.price, 108345000);
    CHECK_EQ(no.time_in_force, '3');
    CHECK_EQ(no.transact_time_ns, NS(1710493200) + 500);
    /* Four decimals cannot hold 1.08345 exactly: an error, not a rounding. */
    CHECK_EQ(tw_fix_read_new_order(&m, 4, &no, &err), -EBADMSG);
    CHECK(strstr(err.msg, "Price(44)") != NULL);

    m = parse_golden(10);
    tw_fix_cancel_request cq;
    CHECK_EQ(tw_fix_read_cancel_request(&m, &cq, &err), 0);
    CHECK_STR(cq.orig_cl_ord_id, "C-1001");
    CHECK_STR(cq.cl_ord_id, "C-1002");
    CHECK_STR(cq.order_id, "OID-77");
    CHECK_STR(cq.symbol, "AAPL");
    CHECK_EQ(cq.side, '1');
    CHECK_EQ(cq.order_qty, 100);
}

static void test_market_data(void)
{
    tw_error err = { 0 };
    tw_fix_msg m = parse_golden(11);
    tw_fix_md_request mr;
    CHECK_EQ(tw_fix_read_md_request(&m, &mr, &err), 0);
    CHECK_STR(mr.md_req_id, "MDR-1");
    CHECK_EQ(mr.subscription_request_type, '1');
    CHECK_EQ(mr.market_depth, 5);
    CHECK_EQ(mr.md_update_type, '1');
    CHECK_EQ(mr.n_entry_types, 2);
    CHECK(mr.entry_types[0] == '0' && mr.entry_types[1] == '1');
    CHECK_EQ(mr.n_symbols, 2);
    /* The symbols in order through the group iterator. */
    tw_fix_group_iter it;
    uint32_t first, n;
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_related_sym, 0), 2);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 1);
    CHECK(m.fields[first].len == 4 && memcmp(m.fields[first].val, "AAPL", 4) == 0);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 1);
    CHECK(m.fields[first].len == 4 && memcmp(m.fields[first].val, "MSFT", 4) == 0);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 0);

    tw_fix_md md;
    tw_fix_md_entry e[8];
    m = parse_golden(12);
    CHECK_EQ(tw_fix_read_md_snapshot(&m, 2, &md, e, 8, &err), 0);
    CHECK_STR(md.md_req_id, "MDR-1");
    CHECK_STR(md.symbol, "AAPL");
    CHECK_EQ(md.n_entries, 3);
    CHECK_EQ(e[0].entry_type, '0');
    CHECK_EQ(e[0].px, 17234);
    CHECK_EQ(e[0].size, 500);
    CHECK_EQ(e[0].position_no, 1);
    CHECK_STR(e[0].symbol, "AAPL");
    CHECK_EQ(e[1].entry_type, '1');
    CHECK_EQ(e[1].px, 17236);
    CHECK_EQ(e[1].size, 300);
    CHECK_EQ(e[2].entry_type, '2');
    CHECK_EQ(e[2].px, 17235);
    CHECK_EQ(e[2].size, 100);
    /* Entries as raw fields: 269 270 271 290 | 269 270 271 290 | 269 270 271. */
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_entries, 0), 3);
    uint32_t sizes[3], k = 0;
    while (k < 3 && tw_fix_group_next(&it, &first, &n) == 1)
        sizes[k++] = n;
    CHECK_EQ(k, 3);
    CHECK(sizes[0] == 4 && sizes[1] == 4 && sizes[2] == 3);
    CHECK_EQ(tw_fix_read_md_snapshot(&m, 2, &md, e, 2, &err), -E2BIG);
    CHECK_EQ(tw_fix_read_md_incremental(&m, 2, &md, e, 8, &err), -ENOMSG); /* it is a W */

    m = parse_golden(13);
    CHECK_EQ(tw_fix_read_md_incremental(&m, 2, &md, e, 8, &err), 0);
    CHECK_EQ(md.n_entries, 3);
    CHECK_EQ(e[0].update_action, '0');
    CHECK_EQ(e[0].entry_type, '0');
    CHECK_STR(e[0].symbol, "AAPL");
    CHECK_EQ(e[0].px, 17233);
    CHECK_EQ(e[0].size, 200);
    CHECK_EQ(e[1].update_action, '1');
    CHECK_EQ(e[1].entry_type, '1');
    CHECK_EQ(e[1].px, 17237);
    CHECK_EQ(e[1].size, 50);
    CHECK_EQ(e[2].update_action, '2');
    CHECK_STR(e[2].symbol, "MSFT");
    CHECK_STR(e[2].entry_id, "Q-9");
    CHECK_EQ(e[2].px, 0);

    m = parse_golden(17);
    CHECK_EQ(tw_fix_read_md_snapshot(&m, PX, &md, e, 8, &err), 0);
    CHECK_EQ(md.n_entries, 2);
    CHECK_EQ(e[1].px, 108350000);
    CHECK_EQ(e[1].size, 2000000);
    m = parse_golden(18);
    CHECK_EQ(tw_fix_read_md_incremental(&m, PX, &md, e, 8, &err), 0);
    CHECK_EQ(md.n_entries, 2);
    CHECK_EQ(e[0].number_of_orders, 3);
    CHECK_EQ(e[0].px, 108341000);
    CHECK_EQ(e[1].update_action, '2');
}

struct bad_case {
    const char *body;
    int which; /* 0 ER, 1 NOS, 2 X, 3 W, 4 logon, 5 resend, 6 V */
    const char *err_has;
};

static const struct bad_case bad_cases[] = {
    { "35=8|37=O|17=E|150=0|39=0|55=S|54=1|151=1|14=0|", 0, "AvgPx(6)" },
    { "35=8|37=O|17=E|150=0|39=0|55=S|54=1|151=1|14=0|6=abc|", 0, "AvgPx(6) has a bad value 'abc'" },
    { "35=8|37=O|17=E|150=00|39=0|55=S|54=1|151=1|14=0|6=0|", 0, "ExecType(150)" },
    { "35=8|37=O|17=E|150=0|39=0|55=S|54=1|151=1.5|14=0|6=0|", 0, "LeavesQty(151)" },
    { "35=8|37=O|17=E|150=0|39=0|55=S|54=1|151=1|14=0|6=0|60=2024|", 0, "TransactTime(60)" },
    { "35=D|11=C|55=S|54=1|38=10|40=2|", 1, "Price(44)" },
    { "35=D|11=C|55=S|54=1|38=0|40=1|", 1, "OrderQty(38)" },
    { "35=D|11=C|55=S|54=1|40=1|", 1, "OrderQty(38) is required" },
    { "35=D|11=C|55=S|54=1|38=5|40=1|", 0, "MsgType(35) is 'D', not '8'" },
    { "35=X|268=3|279=0|269=0|270=1|279=0|269=1|270=2|", 2, "fewer entries" },
    { "35=X|268=1|269=0|279=0|270=1|", 2, "bad count" },
    { "35=X|268=x|279=0|", 2, "bad count" },
    { "35=X|262=R|", 2, "NoMDEntries(268)" },
    { "35=X|268=1|279=0|270=1.2.3|", 2, "MDEntryPx(270)" },
    { "35=W|262=R|268=1|269=0|270=1|", 3, "Symbol(55)" },
    { "35=W|55=S|268=1|269=0|270=1|271=-|", 3, "MDEntrySize(271)" },
    { "35=A|98=0|", 4, "HeartBtInt(108)" },
    { "35=A|98=0|108=-1|", 4, "HeartBtInt(108)" },
    { "35=2|7=10|16=5|", 5, "EndSeqNo(16)" },
    { "35=2|7=0|16=5|", 5, "BeginSeqNo(7)" },
    { "35=V|262=R|263=1|264=0|146=1|55=S|", 6, "NoMDEntryTypes(267)" },
    { "35=V|262=R|263=1|264=0|267=1|269=0|146=2|55=S|", 6, "fewer entries" },
};

static void test_bad(void)
{
    char buf[1024];
    for (size_t i = 0; i < TW_ARRAY_SIZE(bad_cases); i++) {
        const struct bad_case *c = &bad_cases[i];
        tw_fix_msg m = parse_body(buf, sizeof(buf), c->body);
        tw_error err = { 0 };
        int rc;
        union {
            tw_fix_exec_report er;
            tw_fix_new_order no;
            tw_fix_logon lo;
            tw_fix_resend_request rr;
            tw_fix_md_request mr;
        } u;
        tw_fix_md md;
        tw_fix_md_entry e[4];
        switch (c->which) {
        case 0: rc = tw_fix_read_exec_report(&m, PX, &u.er, &err); break;
        case 1: rc = tw_fix_read_new_order(&m, PX, &u.no, &err); break;
        case 2: rc = tw_fix_read_md_incremental(&m, PX, &md, e, 4, &err); break;
        case 3: rc = tw_fix_read_md_snapshot(&m, PX, &md, e, 4, &err); break;
        case 4: rc = tw_fix_read_logon(&m, &u.lo, &err); break;
        case 5: rc = tw_fix_read_resend_request(&m, &u.rr, &err); break;
        default: rc = tw_fix_read_md_request(&m, &u.mr, &err); break;
        }
        if (rc == 0 || !strstr(err.msg, c->err_has))
            fprintf(stderr, "bad case %zu '%s': rc %d, error '%s', expected '%s'\n", i,
                    c->body, rc, err.msg, c->err_has);
        CHECK(rc < 0);
        CHECK(strstr(err.msg, c->err_has) != NULL);
    }
}

/* Group iteration edge cases on hand-made messages. */
static void test_groups(void)
{
    char buf[1024];
    tw_fix_group_iter it;
    uint32_t first, n;
    /* No count tag: zero entries, and next says so at once. */
    tw_fix_msg m = parse_body(buf, sizeof(buf), "35=X|262=R|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), 0);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 0);
    /* A count of zero. */
    m = parse_body(buf, sizeof(buf), "35=X|268=0|58=x|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), 0);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 0);
    /* A count above the fields that follow is refused at begin. */
    m = parse_body(buf, sizeof(buf), "35=X|268=50|279=0|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), -EBADMSG);
    m = parse_body(buf, sizeof(buf), "35=X|268=-1|279=0|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), -EBADMSG);
    /* The first field after the count must be the delimiter. */
    m = parse_body(buf, sizeof(buf), "35=X|268=1|269=0|279=0|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), -EBADMSG);
    /* The last entry ends at the first tag that is not a member (58 is a
     * member, 10 and 9999 are not), and fewer entries than announced is an
     * error from next. */
    m = parse_body(buf, sizeof(buf), "35=X|268=3|279=0|270=1|279=1|58=t|9999=z|279=2|");
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, 0), 3);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), 1);
    CHECK_EQ(n, 2);
    CHECK_EQ(tw_fix_group_next(&it, &first, &n), -EBADMSG);
    /* `from` skips an earlier group with the same count tag. */
    m = parse_body(buf, sizeof(buf), "35=X|268=1|279=0|58=a|268=2|279=1|279=2|");
    int second = tw_fix_find(&m, 268, 4);
    CHECK(second > 0);
    CHECK_EQ(tw_fix_group_begin(&it, &m, &tw_fix_grp_md_inc_entries, (uint32_t)second), 2);
    CHECK_EQ(tw_fix_find(&m, 99, 0), -ENOENT);
    CHECK(tw_fix_get(&m, 58) != NULL && tw_fix_get(&m, 58)->val[0] == 'a');
    CHECK(tw_fix_get(&m, 77) == NULL);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s golden/messages.fix\n", argv[0]);
        return 2;
    }
    int n = load_golden(argv[1], gold, GOLDEN_MAX);
    CHECK(n == 19);
    if (n != 19)
        return 1;
    test_session_messages();
    test_order_messages();
    test_market_data();
    test_bad();
    test_groups();
    /* Names for the tools. */
    CHECK(strcmp(tw_fix_tag_name(34), "MsgSeqNum") == 0);
    CHECK(strcmp(tw_fix_tag_name(10), "CheckSum") == 0);
    CHECK(strcmp(tw_fix_tag_name(1137), "DefaultApplVerID") == 0);
    CHECK(tw_fix_tag_name(99999) == NULL);
    CHECK(strcmp(tw_fix_msg_type_name("8", 1), "ExecutionReport") == 0);
    CHECK(strcmp(tw_fix_enum_name(54, "2", 1), "Sell") == 0);
    extern int tw__fix_tag_table_sorted(void);
    CHECK(tw__fix_tag_table_sorted());
    extern int tw__fix_md_tables_consistent(void);
    CHECK(tw__fix_md_tables_consistent());
    for (int i = 0; i < n; i++)
        free(gold[i].p);
    return tw_check_done("fix accessors");
}
