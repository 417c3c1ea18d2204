// QuickFIX side of `tickwire bench fix`: the same messages parsed by
// FIX::Message from a string, as QuickFIX does by default without a data
// dictionary (BodyLength and CheckSum validated; none is installed with
// Debian's libquickfix-dev), alone and followed by reading the fields our
// typed structs hold with QuickFIX's typed getters (FIX::LastPx,
// FIX::CumQty, ...: the string-to-double/int/char/timestamp conversion is
// part of the read, as it is in ours).  Without a dictionary QuickFIX keeps
// a repeating group's fields flat, sorted by tag; the X entries are read
// by walking them once (the k-th occurrence of a tag belongs to entry k),
// which is the cheapest way QuickFIX has to reach them.  C-callable so the
// benchmark itself stays C.
#include <cstddef>
#include <cstring>
#include <string>

#include <quickfix/FieldConvertors.h>
#include <quickfix/FixFields.h>
#include <quickfix/Message.h>

extern "C" {
int tw__qf_get(const char *msg, size_t len, int tag, char *out, size_t cap);
long tw__qf_parse_loop(const char *msg, size_t len, long iters);
double tw__qf_read_loop(const char *msg, size_t len, char type, long iters);
}

// Parses msg and copies the value of tag into out.  Returns the value's
// length, or -1 if QuickFIX rejects the message or has no such field.
int tw__qf_get(const char *msg, size_t len, int tag, char *out, size_t cap)
{
    try {
        std::string s(msg, len);
        FIX::Message m(s);
        std::string v;
        if (m.getHeader().isSetField(tag))
            v = m.getHeader().getField(tag);
        else if (m.isSetField(tag))
            v = m.getField(tag);
        else
            return -1;
        if (v.size() + 1 > cap)
            return -1;
        std::memcpy(out, v.c_str(), v.size() + 1);
        return (int)v.size();
    } catch (...) {
        return -1;
    }
}

// Constructs FIX::Message iters times from the same string (the string is
// made once: QuickFIX's API takes one, and a reader would have it already).
// Returns a sum over the parsed messages so the work cannot be elided.
long tw__qf_parse_loop(const char *msg, size_t len, long iters)
{
    std::string s(msg, len);
    long acc = 0;
    for (long i = 0; i < iters; i++) {
        try {
            FIX::Message m(s);
            acc += (long)m.totalFields();
        } catch (...) {
            acc -= 1000000;
        }
    }
    return acc;
}

// The header fields tw_fix_header holds.  Returns MsgSeqNum (what the
// digest adds).
static double read_header(const FIX::Message &m, long *acc)
{
    const FIX::Header &h = m.getHeader();
    FIX::MsgSeqNum seq;
    FIX::SendingTime st;
    FIX::SenderCompID snd;
    FIX::TargetCompID tgt;
    h.getField(seq);
    h.getField(st);
    h.getField(snd);
    h.getField(tgt);
    *acc += (long)snd.getValue().size() + (long)tgt.getValue().size() + st.getValue().getSecond();
    return (double)seq.getValue();
}

// ExecutionReport: every field tw_fix_exec_report holds, by typed getter.
// The digest: MsgSeqNum + the quantities and prices.
static double read_er(const FIX::Message &m, long *acc)
{
    double d = read_header(m, acc);
    FIX::OrderID oid;
    FIX::ClOrdID cl;
    FIX::ExecID eid;
    FIX::Symbol sym;
    FIX::Account acct;
    FIX::Text text;
    FIX::ExecType et;
    FIX::OrdStatus os;
    FIX::Side side;
    FIX::OrdType ot;
    FIX::TimeInForce tif;
    FIX::OrderQty oq;
    FIX::Price px;
    FIX::LastQty lq;
    FIX::LastPx lp;
    FIX::LeavesQty leaves;
    FIX::CumQty cum;
    FIX::AvgPx avg;
    FIX::TransactTime tt;
    m.getField(oid);
    m.getFieldIfSet(cl);
    m.getField(eid);
    m.getField(sym);
    m.getFieldIfSet(acct);
    m.getFieldIfSet(text);
    m.getField(et);
    m.getField(os);
    m.getField(side);
    m.getFieldIfSet(ot);
    m.getFieldIfSet(tif);
    m.getFieldIfSet(oq);
    m.getFieldIfSet(px);
    m.getFieldIfSet(lq);
    m.getFieldIfSet(lp);
    m.getField(leaves);
    m.getField(cum);
    m.getField(avg);
    m.getFieldIfSet(tt);
    *acc += (long)(oid.getValue().size() + cl.getValue().size() + eid.getValue().size() +
                   sym.getValue().size() + acct.getValue().size() + text.getValue().size()) +
            et.getValue() + os.getValue() + side.getValue() + ot.getValue() + tif.getValue() +
            tt.getValue().getSecond();
    return d + oq.getValue() + px.getValue() + lq.getValue() + lp.getValue() +
           leaves.getValue() + cum.getValue() + avg.getValue();
}

// NewOrderSingle: every field tw_fix_new_order holds.
static double read_nos(const FIX::Message &m, long *acc)
{
    double d = read_header(m, acc);
    FIX::ClOrdID cl;
    FIX::Symbol sym;
    FIX::Account acct;
    FIX::Side side;
    FIX::OrdType ot;
    FIX::TimeInForce tif;
    FIX::HandlInst hi;
    FIX::OrderQty oq;
    FIX::Price px;
    FIX::TransactTime tt;
    m.getField(cl);
    m.getField(sym);
    m.getFieldIfSet(acct);
    m.getField(side);
    m.getField(ot);
    m.getFieldIfSet(tif);
    m.getFieldIfSet(hi);
    m.getField(oq);
    m.getFieldIfSet(px);
    m.getFieldIfSet(tt);
    *acc += (long)(cl.getValue().size() + sym.getValue().size() + acct.getValue().size()) +
            side.getValue() + ot.getValue() + tif.getValue() + hi.getValue() +
            tt.getValue().getSecond();
    return d + oq.getValue() + px.getValue();
}

// MarketDataIncrementalRefresh: MDReqID, NoMDEntries and, per entry, the
// fields tw_fix_md_entry holds, walking the flat field list once.  The
// digest adds the entry count and every MDEntryPx and MDEntrySize.
static double read_mdx(const FIX::Message &m, long *acc)
{
    double d = read_header(m, acc);
    FIX::MDReqID req;
    FIX::NoMDEntries n;
    m.getFieldIfSet(req);
    m.getField(n);
    d += (double)n.getValue();
    *acc += (long)req.getValue().size();
    for (FIX::FieldMap::const_iterator it = m.begin(); it != m.end(); ++it) {
        const std::string &v = it->getString();
        switch (it->getTag()) {
        case 279: // MDUpdateAction
        case 269: // MDEntryType
            *acc += FIX::CharConvertor::convert(v);
            break;
        case 55:  // Symbol
        case 278: // MDEntryID
            *acc += (long)v.size();
            break;
        case 270: // MDEntryPx
        case 271: // MDEntrySize
            d += FIX::DoubleConvertor::convert(v);
            break;
        case 290: // MDEntryPositionNo
        case 346: // NumberOfOrders
            *acc += FIX::IntConvertor::convert(v);
            break;
        default:
            break;
        }
    }
    return d;
}

// Parse + reads, iters times.  Returns the digest of the last message
// (the caller checks it against ours before timing), or NaN if QuickFIX
// rejected the message or one of the reads.
double tw__qf_read_loop(const char *msg, size_t len, char type, long iters)
{
    std::string s(msg, len);
    double digest = 0;
    long acc = 0;
    for (long i = 0; i < iters; i++) {
        try {
            FIX::Message m(s);
            digest = type == '8' ? read_er(m, &acc) : type == 'D' ? read_nos(m, &acc)
                                                                   : read_mdx(m, &acc);
        } catch (...) {
            return __builtin_nan("");
        }
    }
    volatile long sink = acc;
    (void)sink;
    return digest;
}
