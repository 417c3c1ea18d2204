// A QuickFIX 1.15 trader for the exchange tests: a counterparty that knows
// nothing of tickwire's code and checks the venue against live.md's
// protocol.  It logs on, subscribes (one V with the first symbol and an
// unknown one, then one V per further symbol), trades a fixed rule from
// inside fromApp (so its orders are written before QuickFIX reaches the
// TestRequest behind the bar), and on TradingSessionStatus Closed checks
// and logs out:
//   - every bar of every symbol arrived once and in order (PossDup copies
//     of bars already seen ignored), 279=0 269=2 55 278=<bar> 271=1, and
//     270 converted with strtod has the dataset's bits (NaN: no 270);
//   - each X's 262 is the MDReqID that subscribed its first entry's symbol;
//   - Open (340=2) before the first bar; Y 281=0 for the unknown symbol;
//   - every order got one ExecutionReport: a fill at the close of the last
//     priced bar at or before the bar it was sent on (bit for bit: 31 and
//     6 through strtod), 32=14=38, 151=0, unique 37/17, Account echoed;
//     an order before any priced bar a reject 103=2;
//   - lockstep: a TestRequest bar-<i> after each bar, and no bar i+1 sent
//     before our Heartbeat for bar-<i> came back: we sleep a few ms before
//     answering, so the venue's SendingTime of bar i+1 is at least that
//     much after its SendingTime of the TestRequest (one clock, the
//     venue's: nothing rests on two processes' clocks agreeing); a venue
//     that does not wait sends bar i+1 microseconds after the TestRequest,
//     and half the sleep is the line between the two.
//   --bad: malformed and unsupported messages at bar 1, each checked for
//     the right Reject / ExecutionReport / OrderCancelReject /
//     BusinessMessageReject.
//   --allow-injected: rejects 103=99 saying "injected" (the venue's
//     reject:N fault) are counted, not errors.
//   --burst BAR:N: N more orders at bar BAR (a flood: with the venue not
//     reading, our send window fills); all must fill at that bar.
//
// --dict FILE runs QuickFIX with that data dictionary (UseDataDictionary=Y:
// QuickFIX then validates every message the venue sends; it is what lets
// QuickFIX take an X with several entries at all); without it,
// UseDataDictionary=N, which takes only X messages of one entry each (the
// venue's --entries-per-x 1).  Either way the entries are read from the
// raw text of the message (kept from the Log interface by MsgSeqNum): a
// message QuickFIX queued behind a gap is replayed from its parsed fields,
// which without a dictionary are sorted by tag.
//
// usage: qf_trader --port P [--host H] --sender ID [--target VENUE]
//                  --data SYM=FILE.f64 ... [--unknown SYM] [--every N]
//                  [--paced] [--bad] [--burst BAR:N] [--expect-reconnect]
//                  [--hb S] [--sleep-ms MS] [--timeout S] [--partial] [--dict FILE]
//                  --results FILE
// --partial: the run may end early (the venue was stopped): bars are not
// counted, nor are orders still in flight when the venue logged out.
// Exit 0 when every check passed; the results file has "key value" lines.
#include <quickfix/Application.h>
#include <quickfix/FileStore.h>
#include <quickfix/Log.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketInitiator.h>

#include <time.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

typedef std::vector<std::pair<int, std::string>> Fields;

int64_t epoch_ns()
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

// "tag=value\x01..." in order.
Fields split(const std::string &raw)
{
    Fields f;
    size_t i = 0;
    while (i < raw.size()) {
        size_t soh = raw.find('\x01', i);
        if (soh == std::string::npos)
            soh = raw.size();
        size_t eq = raw.find('=', i);
        if (eq != std::string::npos && eq < soh)
            f.emplace_back(std::atoi(raw.substr(i, eq - i).c_str()), raw.substr(eq + 1, soh - eq - 1));
        i = soh + 1;
    }
    return f;
}

const std::string *get(const Fields &f, int tag)
{
    for (auto &kv : f)
        if (kv.first == tag)
            return &kv.second;
    return nullptr;
}

uint64_t bits(double d)
{
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

// UTCTimestamp YYYYMMDD-HH:MM:SS[.fff...] to ns since the epoch.
int64_t utc_ns(const std::string &s)
{
    struct tm tm;
    std::memset(&tm, 0, sizeof(tm));
    if (s.size() < 17 || !strptime(s.c_str(), "%Y%m%d-%H:%M:%S", &tm))
        return -1;
    int64_t ns = (int64_t)timegm(&tm) * 1000000000;
    if (s.size() > 18 && s[17] == '.') {
        std::string frac = s.substr(18);
        while (frac.size() < 9)
            frac += '0';
        ns += std::atoll(frac.substr(0, 9).c_str());
    }
    return ns;
}

struct Symbol {
    std::string name, md_req;
    std::vector<double> close;
    size_t next = 0;      // next bar expected
    int position = 0;     // for the rule: -1, 0, +1
};

struct Order {
    std::string sym;
    long bar;             // the bar it was sent on
    long qty;
    int answers = 0;
    bool burst = false;
};

struct Bad {
    std::string what;
    std::string expect;   // "3:373=1:371=54", "8:103=13", "9", "j"
    bool ok = false;
};

// Keeps the raw text of each incoming message by MsgSeqNum.
struct RawLog : public FIX::Log {
    std::mutex *mu;
    std::map<long, std::string> *raw;
    void clear() override {}
    void backup() override {}
    void onIncoming(const std::string &m) override
    {
        Fields f = split(m);
        const std::string *seq = get(f, 34);
        if (!seq)
            return;
        std::lock_guard<std::mutex> g(*mu);
        (*raw)[std::atol(seq->c_str())] = m;
        if (raw->size() > 200000)
            raw->erase(raw->begin());
    }
    void onOutgoing(const std::string &) override {}
    void onEvent(const std::string &e) override
    {
        if (std::getenv("QF_TRADER_VERBOSE"))
            std::fprintf(stderr, "qf_trader: event: %s\n", e.c_str());
    }
};

struct RawLogFactory : public FIX::LogFactory {
    std::mutex mu;
    std::map<long, std::string> raw;
    FIX::Log *create() override { return make(); }
    FIX::Log *create(const FIX::SessionID &) override { return make(); }
    void destroy(FIX::Log *l) override { delete l; }
    RawLog *make()
    {
        RawLog *l = new RawLog;
        l->mu = &mu;
        l->raw = &raw;
        return l;
    }
    bool find(long seq, std::string &out)
    {
        std::lock_guard<std::mutex> g(mu);
        auto it = raw.find(seq);
        if (it == raw.end())
            return false;
        out = it->second;
        return true;
    }
};

volatile std::sig_atomic_t stop_flag = 0;
void on_signal(int) { stop_flag = 1; }

class Trader : public FIX::Application {
public:
    std::mutex mu;
    std::condition_variable cv;
    RawLogFactory *logs = nullptr;
    std::vector<Symbol> syms;
    std::string unknown;
    bool paced = false, bad_mode = false, closed = false, logged_on = false;
    bool allow_injected = false;
    long injected = 0;
    long every = 5, burst_bar = -1, burst_n = 0;
    int sleep_ms = 3;
    FIX::SessionID sid;
    // results
    long logons = 0, errors = 0, opened_before_bars = 0, opens = 0, y_unknown = 0;
    long x_msgs = 0, possdup_dups = 0, test_requests = 0, hb_bar = 0, barrier_late = 0;
    long fills = 0, rejects = 0, orders_sent = 0, bars_total = 0, cancel_rejects = 0;
    long next_id = 1, unanswered = 0;
    long max_bar_seen = -1;
    std::map<long, int64_t> hb_sent_ns;      // bar -> when our Heartbeat bar-<i> left
    std::map<long, int64_t> tr_sending_ns;   // bar -> the venue's SendingTime of bar-<i>
    std::map<std::string, Order> orders;
    std::set<std::string> order_ids, exec_ids;
    std::map<long, Bad> bad;                 // by our MsgSeqNum
    std::map<std::string, long> bad_by_id;   // ClOrdID -> key into bad
    bool bad_sent = false;

    void error(const char *fmt, ...) __attribute__((format(printf, 2, 3)))
    {
        errors++;
        if (errors > 30)
            return;
        va_list ap;
        va_start(ap, fmt);
        std::fprintf(stderr, "qf_trader: ");
        std::vfprintf(stderr, fmt, ap);
        std::fprintf(stderr, "\n");
        va_end(ap);
    }

    int sym_index(const std::string &n)
    {
        for (size_t i = 0; i < syms.size(); i++)
            if (syms[i].name == n)
                return (int)i;
        return -1;
    }

    long fill_bar(const Symbol &s, long bar)
    {
        for (long b = bar; b >= 0; b--)
            if (b < (long)s.close.size() && !std::isnan(s.close[b]))
                return b;
        return -1;
    }

    static std::string now_utc()
    {
        char b[32];
        time_t t = time(nullptr);
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(b, sizeof(b), "%Y%m%d-%H:%M:%S.000", &tm);
        return b;
    }

    // Sends (session thread or not) and returns our MsgSeqNum of it.
    long send(FIX::Message &m)
    {
        FIX::Session::sendToTarget(m, sid);
        return m.getHeader().isSetField(34) ? std::atol(m.getHeader().getField(34).c_str()) : -1;
    }

    void order(const std::string &sym, char side, long qty, long bar, bool burst)
    {
        std::string id = "Q" + std::to_string(next_id++);
        FIX::Message m;
        m.getHeader().setField(35, "D");
        m.setField(11, id);
        m.setField(1, "inst-" + sym);
        m.setField(55, sym);
        m.setField(54, std::string(1, side));
        m.setField(38, std::to_string(qty));
        m.setField(40, "1");
        m.setField(60, now_utc());
        Order o;
        o.sym = sym;
        o.bar = bar;
        o.qty = qty;
        o.burst = burst;
        orders[id] = o;
        orders_sent++;
        send(m);
    }

    void subscribe()
    {
        for (size_t i = 0; i < syms.size(); i++) {
            FIX::Message m;
            m.getHeader().setField(35, "V");
            std::string req = "md-" + std::to_string(i);
            syms[i].md_req = req;
            m.setField(262, req);
            m.setField(263, "1");
            m.setField(264, "1");
            m.setField(265, "1");
            FIX::Group types(267, 269);
            types.setField(269, "2");
            m.addGroup(types);
            FIX::Group s1(146, 55);
            s1.setField(55, syms[i].name);
            m.addGroup(s1);
            if (i == 0 && !unknown.empty()) {
                FIX::Group s2(146, 55);
                s2.setField(55, unknown);
                m.addGroup(s2);
            }
            send(m);
        }
    }

    // Malformed and unsupported messages, each with what must come back.
    void send_bad(long bar)
    {
        (void)bar;
        struct Case {
            const char *what, *expect;
            std::vector<std::pair<int, std::string>> kv;
            const char *type;
        };
        std::string t = now_utc();
        std::vector<Case> cs = {
            {"D without Side", "3:373=1:371=54", {{11, "bad1"}, {55, syms[0].name}, {38, "1"}, {40, "1"}, {60, t}}, "D"},
            {"D Side=9", "3:373=5:371=54", {{11, "bad2"}, {55, syms[0].name}, {54, "9"}, {38, "1"}, {40, "1"}, {60, t}}, "D"},
            {"D OrderQty=abc", "3:373=6:371=38", {{11, "bad3"}, {55, syms[0].name}, {54, "1"}, {38, "abc"}, {40, "1"}, {60, t}}, "D"},
            {"D OrderQty=0", "8:103=13", {{11, "bad4"}, {55, syms[0].name}, {54, "1"}, {38, "0"}, {40, "1"}, {60, t}}, "D"},
            {"D OrdType=2", "8:103=11", {{11, "bad5"}, {55, syms[0].name}, {54, "1"}, {38, "1"}, {40, "2"}, {44, "1.5"}, {60, t}}, "D"},
            {"D unknown symbol", "8:103=1", {{11, "bad6"}, {55, "NOPE"}, {54, "1"}, {38, "1"}, {40, "1"}, {60, t}}, "D"},
            {"D duplicate ClOrdID", "8:103=6", {{11, "Q1"}, {55, syms[0].name}, {54, "1"}, {38, "1"}, {40, "1"}, {60, t}}, "D"},
            {"F of a filled order", "9:102=0", {{41, "Q1"}, {11, "cx1"}, {55, syms[0].name}, {54, "1"}, {60, t}}, "F"},
            {"G unsupported", "j:380=3", {{11, "rep1"}, {41, "Q1"}}, "G"},
        };
        for (auto &c : cs) {
            FIX::Message m;
            m.getHeader().setField(35, c.type);
            for (auto &kv : c.kv)
                m.setField(kv.first, kv.second);
            long seq = send(m);
            Bad b;
            b.what = c.what;
            b.expect = c.expect;
            bad[seq] = b;
            const std::string *id = nullptr;
            for (auto &kv : c.kv)
                if (kv.first == 11)
                    id = &kv.second;
            if (id)
                bad_by_id[*id] = seq;
        }
        bad_sent = true;
    }

    void check_bad_answer(const std::string &type, const Fields &f)
    {
        long key = -1;
        if (type == "3" || type == "j") {
            const std::string *ref = get(f, 45);
            if (ref)
                key = std::atol(ref->c_str());
        } else {
            const std::string *id = get(f, 11);
            if (id && bad_by_id.count(*id))
                key = bad_by_id[*id];
            // The duplicate's answer: a reject for Q1 (Q1's own fill is
            // the other report with that ClOrdID).
            if (id && *id == "Q1" && type == "8") {
                const std::string *et = get(f, 150);
                if (!et || *et != "8")
                    return;
            }
        }
        if (key < 0 || !bad.count(key))
            return;
        Bad &b = bad[key];
        std::string want = b.expect;
        std::string wtype = want.substr(0, want.find(':'));
        bool ok = wtype == type;
        size_t p = want.find(':');
        while (ok && p != std::string::npos) {
            size_t q = want.find(':', p + 1);
            std::string kv = want.substr(p + 1, q == std::string::npos ? std::string::npos : q - p - 1);
            int tag = std::atoi(kv.substr(0, kv.find('=')).c_str());
            std::string val = kv.substr(kv.find('=') + 1);
            const std::string *v = get(f, tag);
            ok = v && *v == val;
            p = q;
        }
        if (type == "8" && ok) {
            const std::string *st = get(f, 39);
            ok = st && *st == "8" && get(f, 58);
        }
        if (!ok)
            error("bad input '%s': want %s, got 35=%s 373=%s 371=%s 103=%s 58=%s", b.what.c_str(),
                  want.c_str(), type.c_str(), get(f, 373) ? get(f, 373)->c_str() : "-",
                  get(f, 371) ? get(f, 371)->c_str() : "-", get(f, 103) ? get(f, 103)->c_str() : "-",
                  get(f, 58) ? get(f, 58)->c_str() : "-");
        b.ok = ok;
    }

    void on_x(const Fields &f, bool possdup)
    {
        x_msgs++;
        if (closed)
            error("X after Closed");
        if (!opens)
            error("X before TradingSessionStatus Open");
        const std::string *req = get(f, 262);
        bool first = true;
        int64_t sending = get(f, 52) ? utc_ns(*get(f, 52)) : -1;
        std::vector<std::pair<int, long>> orders_due; // (symbol, bar)
        for (size_t i = 0; i < f.size(); i++) {
            if (f[i].first != 279)
                continue;
            // One entry: 279 up to the next 279 (or the end).
            std::string e279 = f[i].second, e269, e55, e278, e270, e271;
            bool has270 = false;
            size_t j = i + 1;
            for (; j < f.size() && f[j].first != 279 && f[j].first != 10; j++) {
                int t = f[j].first;
                if (t == 269) e269 = f[j].second;
                else if (t == 55) e55 = f[j].second;
                else if (t == 278) e278 = f[j].second;
                else if (t == 270) e270 = f[j].second, has270 = true;
                else if (t == 271) e271 = f[j].second;
            }
            int s = sym_index(e55);
            if (s < 0) {
                error("X entry for unknown symbol '%s'", e55.c_str());
                continue;
            }
            Symbol &y = syms[s];
            if (first && (!req || *req != y.md_req))
                error("X 262=%s, its first entry %s was subscribed as %s",
                      req ? req->c_str() : "-", e55.c_str(), y.md_req.c_str());
            first = false;
            if (e279 != "0" || e269 != "2" || e271 != "1")
                error("%s entry: 279=%s 269=%s 271=%s", e55.c_str(), e279.c_str(), e269.c_str(),
                      e271.c_str());
            long b = std::atol(e278.c_str());
            if (possdup && b < (long)y.next) {
                possdup_dups++;
                continue;
            }
            if (b != (long)y.next) {
                error("%s: bar %ld arrived, expected %zu%s", e55.c_str(), b, y.next,
                      possdup ? " (PossDup)" : "");
                continue;
            }
            if (b >= (long)y.close.size()) {
                error("%s: bar %ld beyond the dataset's %zu", e55.c_str(), b, y.close.size());
                continue;
            }
            double want = y.close[b];
            if (std::isnan(want)) {
                if (has270)
                    error("%s bar %ld is NaN in the dataset but came with 270=%s", e55.c_str(), b,
                          e270.c_str());
            } else {
                char *end = nullptr;
                double got = has270 ? std::strtod(e270.c_str(), &end) : NAN;
                if (!has270 || *end || bits(got) != bits(want))
                    error("%s bar %ld: 270=%s, dataset %.17g", e55.c_str(), b, e270.c_str(), want);
                if (has270 && e270.find_first_of("eE") != std::string::npos)
                    error("%s bar %ld: 270=%s has an exponent", e55.c_str(), b, e270.c_str());
            }
            // The barrier: bar b went out after our Heartbeat for bar-<b-1>.
            if (!paced && b > 0) {
                auto hb = hb_sent_ns.find(b - 1);
                auto tr = tr_sending_ns.find(b - 1);
                if (hb == hb_sent_ns.end()) {
                    error("%s bar %ld arrived before we answered bar-%ld", e55.c_str(), b, b - 1);
                    barrier_late++;
                } else if (sleep_ms > 0 && sending >= 0 && tr != tr_sending_ns.end() &&
                           sending - tr->second < (int64_t)sleep_ms * 500000) {
                    error("%s bar %ld sent %lld us after TestRequest bar-%ld, within the %d ms "
                          "we held our Heartbeat back",
                          e55.c_str(), b, (long long)(sending - tr->second) / 1000, b - 1,
                          sleep_ms);
                    barrier_late++;
                }
            }
            y.next++;
            bars_total++;
            if (b > max_bar_seen)
                max_bar_seen = b;
            orders_due.emplace_back(s, b);
        }
        // The rule: every `every` bars per symbol (offset by the symbol's
        // index), flat -> 1 unit, then 2 units the other way.
        for (auto &sb : orders_due) {
            Symbol &y = syms[sb.first];
            long b = sb.second;
            if ((b + sb.first) % every == 0) {
                char side = y.position <= 0 ? '1' : '2';
                long qty = y.position == 0 ? 1 : 2;
                y.position = side == '1' ? 1 : -1;
                order(y.name, side, qty, b, false);
            }
            if (sb.first == 0 && b == burst_bar)
                for (long k = 0; k < burst_n; k++)
                    order(y.name, k % 2 ? '2' : '1', 1, b, true);
            if (sb.first == 0 && b == 1 && bad_mode && !bad_sent)
                send_bad(b);
        }
    }

    void on_er(const Fields &f, bool possdup)
    {
        const std::string *id = get(f, 11);
        const std::string *et = get(f, 150);
        if (!id || !et) {
            error("ExecutionReport without 11 or 150");
            return;
        }
        if (bad_mode) {
            check_bad_answer("8", f);
            if (*id == "Q1" && *et == "8")
                return; // the duplicate ClOrdID's reject, checked above
            if (*id != "Q1" && bad_by_id.count(*id))
                return;
        }
        auto it = orders.find(*id);
        if (it == orders.end()) {
            error("ExecutionReport for unknown ClOrdID %s", id->c_str());
            return;
        }
        Order &o = it->second;
        if (possdup && o.answers > 0)
            return;
        if (++o.answers > 1) {
            error("order %s answered twice", id->c_str());
            return;
        }
        const std::string *oid = get(f, 37), *eid = get(f, 17);
        if (!oid || !eid || !order_ids.insert(*oid).second || !exec_ids.insert(*eid).second)
            error("order %s: OrderID/ExecID missing or not unique", id->c_str());
        const std::string *acct = get(f, 1);
        if (!acct || *acct != "inst-" + o.sym)
            error("order %s: Account not echoed", id->c_str());
        Symbol &y = syms[sym_index(o.sym)];
        long want = fill_bar(y, o.bar);
        if (*et == "8") {
            rejects++;
            const std::string *r = get(f, 103), *text = get(f, 58);
            if (allow_injected && r && *r == "99" && text &&
                text->find("injected") != std::string::npos) {
                injected++;
                return;
            }
            if (want >= 0 || !r || *r != "2")
                error("order %s rejected (103=%s 58=%s), expected a fill at bar %ld", id->c_str(),
                      r ? r->c_str() : "-", get(f, 58) ? get(f, 58)->c_str() : "-", want);
            return;
        }
        if (*et != "F") {
            error("order %s: ExecType %s", id->c_str(), et->c_str());
            return;
        }
        fills++;
        static const int need[] = {37, 11, 17, 150, 39, 55, 54, 38, 32, 31, 151, 14, 6, 60};
        for (int t : need)
            if (!get(f, t))
                error("order %s: fill without tag %d", id->c_str(), t);
        const std::string *px = get(f, 31), *avg = get(f, 6);
        if (!px || !avg)
            return;
        double p = std::strtod(px->c_str(), nullptr), a = std::strtod(avg->c_str(), nullptr);
        std::string q = std::to_string(o.qty);
        if (*get(f, 39) != "2" || !get(f, 32) || *get(f, 32) != q || !get(f, 14) || *get(f, 14) != q ||
            !get(f, 38) || *get(f, 38) != q || *get(f, 151) != "0" || bits(p) != bits(a))
            error("order %s: fill fields 39/32/14/38/151/6 wrong", id->c_str());
        if (!paced) {
            if (want < 0 || bits(p) != bits(y.close[want]))
                error("order %s (bar %ld): 31=%s, want bar %ld close %.17g", id->c_str(), o.bar,
                      px->c_str(), want, want >= 0 ? y.close[want] : NAN);
        } else {
            bool found = false;
            for (long b = want < 0 ? 0 : want; b < (long)y.close.size() && b <= max_bar_seen + 1 && !found; b++)
                found = !std::isnan(y.close[b]) && bits(p) == bits(y.close[b]);
            if (!found)
                error("order %s (bar %ld): 31=%s is no close at or after it", id->c_str(), o.bar,
                      px->c_str());
        }
    }

    void onCreate(const FIX::SessionID &) override {}
    void onLogon(const FIX::SessionID &s) override
    {
        std::lock_guard<std::mutex> g(mu);
        sid = s;
        logged_on = true;
        logons++;
        // First logon or after a reconnect: (re)subscribe, as live.md says.
        subscribe();
        cv.notify_all();
    }
    void onLogout(const FIX::SessionID &) override
    {
        std::lock_guard<std::mutex> g(mu);
        logged_on = false;
        cv.notify_all();
    }
    void toAdmin(FIX::Message &m, const FIX::SessionID &) override
    {
        if (m.getHeader().getField(35) != "0" || !m.isSetField(112))
            return;
        std::string id = m.getField(112);
        if (id.compare(0, 4, "bar-") == 0) {
            std::lock_guard<std::mutex> g(mu);
            long b = std::atol(id.c_str() + 4);
            if (!hb_sent_ns.count(b)) {
                hb_sent_ns[b] = epoch_ns();
                hb_bar++;
            }
        }
    }
    void toApp(FIX::Message &, const FIX::SessionID &) throw(FIX::DoNotSend) override {}
    void fromAdmin(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::RejectLogon) override
    {
        std::string type = m.getHeader().getField(35);
        if (type == "1") {
            std::string id = m.isSetField(112) ? m.getField(112) : "";
            if (id.compare(0, 4, "bar-") == 0) {
                {
                    std::lock_guard<std::mutex> g(mu);
                    test_requests++;
                    long b = std::atol(id.c_str() + 4);
                    if (m.getHeader().isSetField(52) && !tr_sending_ns.count(b))
                        tr_sending_ns[b] = utc_ns(m.getHeader().getField(52));
                }
                // QuickFIX answers when we return: hold it back a little
                // so that a venue that does not wait is seen to send the
                // next bar before our answer.
                if (sleep_ms > 0)
                    usleep((useconds_t)sleep_ms * 1000);
            }
        }
        if (type == "3" && bad_mode) {
            std::lock_guard<std::mutex> g(mu);
            Fields f;
            for (int t : {45, 371, 372, 373, 58})
                if (m.isSetField(t))
                    f.emplace_back(t, m.getField(t));
            check_bad_answer("3", f);
        }
    }
    void fromApp(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::UnsupportedMessageType) override
    {
        std::string type = m.getHeader().getField(35);
        long seq = std::atol(m.getHeader().getField(34).c_str());
        bool possdup = m.getHeader().isSetField(43) && m.getHeader().getField(43) == "Y";
        std::string raw;
        if (!logs->find(seq, raw)) {
            std::lock_guard<std::mutex> g(mu);
            error("no raw text for MsgSeqNum %ld", seq);
            return;
        }
        Fields f = split(raw);
        std::lock_guard<std::mutex> g(mu);
        if (type == "X") {
            on_x(f, possdup);
        } else if (type == "8") {
            on_er(f, possdup);
        } else if (type == "Y") {
            const std::string *r = get(f, 281), *req = get(f, 262);
            if (unknown.empty() || !r || *r != "0" || !req || *req != "md-0")
                error("unexpected MarketDataRequestReject 281=%s", r ? r->c_str() : "-");
            else
                y_unknown++;
        } else if (type == "h") {
            const std::string *st = get(f, 340);
            if (!get(f, 336))
                error("TradingSessionStatus without 336");
            if (st && *st == "2") {
                opens++;
                if (bars_total == 0)
                    opened_before_bars++;
            } else if (st && *st == "3") {
                closed = true;
                cv.notify_all();
            }
        } else if (type == "9") {
            cancel_rejects++;
            if (bad_mode)
                check_bad_answer("9", f);
        } else if (type == "j") {
            if (bad_mode)
                check_bad_answer("j", f);
            else
                error("BusinessMessageReject");
        }
    }

    void final_checks(bool expect_reconnect, bool partial)
    {
        for (auto &y : syms)
            if (!partial && y.next != y.close.size())
                error("%s: %zu of %zu bars", y.name.c_str(), y.next, y.close.size());
        for (auto &kv : orders) {
            // A run stopped early (the venue's SIGTERM: Closed, then its
            // Logout at once) leaves the orders in flight then unanswered:
            // FIX has no answer after a Logout.  Counted, not an error.
            if (partial && kv.second.answers == 0)
                unanswered++;
            else if (kv.second.answers != 1)
                error("order %s answered %d times", kv.first.c_str(), kv.second.answers);
        }
        if (!closed)
            error("no TradingSessionStatus Closed");
        if (!opened_before_bars)
            error("no TradingSessionStatus Open before the first bar");
        if (!unknown.empty() && y_unknown < 1)
            error("no MarketDataRequestReject for %s", unknown.c_str());
        if (bad_mode)
            for (auto &kv : bad)
                if (!kv.second.ok)
                    error("bad input '%s': no (right) answer", kv.second.what.c_str());
        if (expect_reconnect && logons < 2)
            error("expected a reconnect, logged on %ld time(s)", logons);
        if (!paced && !partial) {
            size_t longest = 0;
            for (auto &y : syms)
                longest = y.close.size() > longest ? y.close.size() : longest;
            if ((size_t)test_requests < longest)
                error("%ld bar TestRequests for %zu bars", test_requests, longest);
        }
    }
};

std::vector<double> read_f64(const std::string &path)
{
    std::vector<double> v;
    std::ifstream in(path, std::ios::binary);
    double d;
    while (in.read(reinterpret_cast<char *>(&d), 8))
        v.push_back(d);
    return v;
}

std::string settings(const std::string &host, int port, const std::string &sender,
                     const std::string &target, int hb, const std::string &dict)
{
    std::ostringstream s;
    s << "[DEFAULT]\nConnectionType=initiator\nStartTime=00:00:00\nEndTime=00:00:00\n";
    if (dict.empty())
        s << "UseDataDictionary=N\n";
    else
        s << "UseDataDictionary=Y\nDataDictionary=" << dict << "\n";
    s << "ResetOnLogon=N\nResetOnLogout=N\nResetOnDisconnect=N\n"
      << "ReconnectInterval=1\nFileStorePath=qfstore-" << sender << "\n"
      << "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=" << sender << "\nTargetCompID=" << target
      << "\nSocketConnectHost=" << host << "\nSocketConnectPort=" << port << "\nHeartBtInt=" << hb
      << "\n";
    return s.str();
}

} // namespace

int main(int argc, char **argv)
{
    std::string host = "127.0.0.1", sender, target = "VENUE", results, dict;
    int port = 0, hb = 30, timeout_s = 300;
    bool expect_reconnect = false, partial = false;
    Trader app;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto val = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "qf_trader: %s needs a value\n", a.c_str());
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "--port") port = std::atoi(val().c_str());
        else if (a == "--host") host = val();
        else if (a == "--sender") sender = val();
        else if (a == "--target") target = val();
        else if (a == "--results") results = val();
        else if (a == "--dict") dict = val();
        else if (a == "--unknown") app.unknown = val();
        else if (a == "--every") app.every = std::atol(val().c_str());
        else if (a == "--hb") hb = std::atoi(val().c_str());
        else if (a == "--sleep-ms") app.sleep_ms = std::atoi(val().c_str());
        else if (a == "--timeout") timeout_s = std::atoi(val().c_str());
        else if (a == "--paced") app.paced = true;
        else if (a == "--bad") app.bad_mode = true;
        else if (a == "--expect-reconnect") expect_reconnect = true;
        else if (a == "--partial") partial = true;
        else if (a == "--allow-injected") app.allow_injected = true;
        else if (a == "--burst") {
            std::string v = val();
            app.burst_bar = std::atol(v.c_str());
            app.burst_n = std::atol(v.c_str() + v.find(':') + 1);
        } else if (a == "--data") {
            std::string v = val();
            size_t eq = v.find('=');
            Symbol y;
            y.name = v.substr(0, eq);
            y.close = read_f64(v.substr(eq + 1));
            if (y.close.empty()) {
                std::fprintf(stderr, "qf_trader: %s: no data\n", v.c_str());
                return 2;
            }
            app.syms.push_back(y);
        } else {
            std::fprintf(stderr, "qf_trader: unknown argument %s\n", a.c_str());
            return 2;
        }
    }
    if (!port || sender.empty() || results.empty() || app.syms.empty() || app.every < 1) {
        std::fprintf(stderr, "qf_trader: --port, --sender, --data and --results are required\n");
        return 2;
    }
    std::signal(SIGTERM, on_signal);
    RawLogFactory logs;
    app.logs = &logs;
    try {
        std::istringstream cfg(settings(host, port, sender, target, hb, dict));
        FIX::SessionSettings ss(cfg);
        FIX::FileStoreFactory store(ss);
        FIX::SocketInitiator initiator(app, store, ss, logs);
        initiator.start();
        std::unique_lock<std::mutex> lk(app.mu);
        auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
        while (!app.closed && !stop_flag && std::chrono::steady_clock::now() < deadline)
            app.cv.wait_for(lk, std::chrono::milliseconds(200));
        if (!app.closed)
            app.error("no Closed within %d s (bars %ld)", timeout_s, app.bars_total);
        lk.unlock();
        // Answers to the last orders may still be on their way in paced
        // mode; in lockstep they came before the last barrier.
        for (int k = 0; k < 20; k++) {
            bool all = true;
            {
                std::lock_guard<std::mutex> g(app.mu);
                for (auto &kv : app.orders)
                    all = all && kv.second.answers > 0;
            }
            if (all)
                break;
            usleep(100000);
        }
        initiator.stop(); // Logout, and waits for the answer
    } catch (std::exception &e) {
        std::fprintf(stderr, "qf_trader: %s\n", e.what());
        return 1;
    }
    std::lock_guard<std::mutex> g(app.mu);
    app.final_checks(expect_reconnect, partial);
    std::ofstream out(results);
    for (auto &y : app.syms)
        out << "bars_" << y.name << " " << y.next << "\n";
    out << "bars_total " << app.bars_total << "\nx_msgs " << app.x_msgs << "\npossdup_dups "
        << app.possdup_dups << "\ntest_requests " << app.test_requests << "\nhb_bar " << app.hb_bar
        << "\nbarrier_late " << app.barrier_late << "\norders " << app.orders_sent << "\nfills "
        << app.fills << "\nrejects " << app.rejects << "\ny_unknown " << app.y_unknown
        << "\ninjected " << app.injected << "\nunanswered " << app.unanswered << "\ncancel_rejects " << app.cancel_rejects << "\nlogons " << app.logons << "\nerrors "
        << app.errors << "\nclosed " << (app.closed ? 1 : 0) << "\n";
    return app.errors ? 1 : 0;
}
