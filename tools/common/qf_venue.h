// A QuickFIX 1.15 acceptor that plays the venue of live.md ("The venue
// protocol (FIX 4.4)", lockstep replay), header-only C++ for the programs
// that need a FIX engine that is not ours on the venue's side:
// tests/trade/qf_venue.cpp (the trader's parity test) and
// bench/live/qf_pair.cpp (the throughput goal of `tickwire bench live`).
// It knows nothing of tickwire's code.  UseDataDictionary=N.
//
//   1. Logon; MarketDataRequest (V) per symbol: known ones subscribed, an
//      unknown one a MarketDataRequestReject (Y) 281=0.
//   2. Once every symbol is subscribed: TradingSessionStatus 340=2, then
//      per bar i: one X per symbol (262 its MDReqID, 268=1, 279=0 269=2
//      55 278=i [270] 271=1), then TestRequest 112=bar-<i>; bar i+1 only
//      after the Heartbeat with 112=bar-<i>.  After the last bar 340=3,
//      and the trader's Logout.
//   3. NewOrderSingle: filled at once at the text of the last priced bar
//      sent for the symbol (ExecutionReport 150=F 39=2 ...), or rejected
//      103=2 before any.  OrderCancelRequest: OrderCancelReject 434=1 102=0.
//   An optional fills log CSV: time,session,clordid,account,symbol,side,qty,bar,price.
#ifndef TW_TOOLS_COMMON_QF_VENUE_H
#define TW_TOOLS_COMMON_QF_VENUE_H

#include <quickfix/Application.h>
#include <quickfix/FileStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketAcceptor.h>
#include <quickfix/fix44/MarketDataIncrementalRefresh.h>
#include <quickfix/fix44/TestRequest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace tw_qf {

// UTCTimestamp text with microseconds, wall clock (QuickFIX's own format).
inline std::string now_ts()
{
    auto t = std::chrono::system_clock::now().time_since_epoch();
    long long us = std::chrono::duration_cast<std::chrono::microseconds>(t).count();
    time_t s = (time_t)(us / 1000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%04d%02d%02d-%02d:%02d:%02d.%06lld", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, us % 1000000);
    return buf;
}

// Sends m on sid; false (and errors counted, the reason on stderr) when
// QuickFIX refused it.
inline bool send_to(FIX::Message &m, const FIX::SessionID &sid, long &errors, const char *who)
{
    try {
        if (FIX::Session::sendToTarget(m, sid))
            return true;
        std::fprintf(stderr, "%s: send: the session refused 35=%s\n", who,
                     m.getHeader().getField(35).c_str());
    } catch (std::exception &e) {
        std::fprintf(stderr, "%s: send: %s\n", who, e.what());
    }
    errors++;
    return false;
}

// One lines-per-bar file: the exact decimal text of each close, an empty
// line for a gap bar.
inline std::vector<std::string> read_lines(const std::string &path)
{
    std::ifstream f(path);
    std::vector<std::string> v;
    std::string line;
    while (std::getline(f, line))
        v.push_back(line);
    return v;
}

struct Symbol {
    std::string name, md_req;
    std::vector<std::string> px; // "" for a gap bar
    bool subscribed = false;
    long last_priced = -1; // bar index of the last priced bar sent
};

struct Venue : public FIX::Application {
    const char *who = "qf_venue"; // the prefix of its messages
    std::mutex mu;
    std::condition_variable cv;
    std::vector<Symbol> syms;
    FIX::SessionID sid;
    bool logged_on = false, logged_out = false;
    long acked = -1; // last bar-<i> answered
    long sent = 0, orders = 0, fills = 0, rejects = 0, acks = 0, errors = 0, n_exec = 0;
    double loop_s = 0; // from 340=2 to the last bar's Heartbeat
    FILE *fills_log = nullptr;

    Symbol *find(const std::string &s)
    {
        for (auto &y : syms)
            if (y.name == s)
                return &y;
        return nullptr;
    }

    void onCreate(const FIX::SessionID &) override {}
    void onLogon(const FIX::SessionID &id) override
    {
        std::lock_guard<std::mutex> l(mu);
        sid = id;
        logged_on = true;
        cv.notify_all();
    }
    void onLogout(const FIX::SessionID &) override
    {
        std::lock_guard<std::mutex> l(mu);
        logged_out = true;
        cv.notify_all();
    }
    void toAdmin(FIX::Message &, const FIX::SessionID &) override {}
    void toApp(FIX::Message &, const FIX::SessionID &) throw(FIX::DoNotSend) override {}
    void fromAdmin(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::RejectLogon) override
    {
        if (m.getHeader().getField(35) != "0" || !m.isSetField(112))
            return;
        std::string id = m.getField(112);
        if (id.compare(0, 4, "bar-") != 0)
            return;
        std::lock_guard<std::mutex> l(mu);
        long i = std::atol(id.c_str() + 4);
        if (i > acked) {
            acked = i;
            acks++;
        }
        cv.notify_all();
    }

    void send(FIX::Message &m) { (void)send_to(m, sid, errors, who); }

    void on_md_request(const FIX::Message &m)
    {
        std::string req = m.isSetField(262) ? m.getField(262) : "";
        std::string sym = m.isSetField(55) ? m.getField(55) : "";
        Symbol *y = find(sym);
        if (!y) {
            FIX::Message rj;
            rj.getHeader().setField(35, "Y");
            rj.setField(262, req);
            rj.setField(281, "0");
            send(rj);
            return;
        }
        y->md_req = req;
        y->subscribed = true;
        cv.notify_all();
    }

    void on_order(const FIX::Message &m)
    {
        orders++;
        std::string cl = m.getField(11), sym = m.getField(55), side = m.getField(54),
                    qty = m.getField(38);
        std::string acct = m.isSetField(1) ? m.getField(1) : "";
        Symbol *y = find(sym);
        FIX::Message er;
        er.getHeader().setField(35, "8");
        std::string n = std::to_string(++n_exec);
        er.setField(37, "QO" + n);
        er.setField(11, cl);
        if (!acct.empty())
            er.setField(1, acct);
        er.setField(17, "QE" + n);
        er.setField(55, sym);
        er.setField(54, side);
        er.setField(38, qty);
        er.setField(60, now_ts());
        if (!y || y->last_priced < 0) {
            er.setField(150, "8");
            er.setField(39, "8");
            er.setField(103, y ? "2" : "1");
            er.setField(58, y ? "no priced bar yet" : "unknown symbol");
            er.setField(151, "0");
            er.setField(14, "0");
            er.setField(6, "0");
            rejects++;
            send(er);
            return;
        }
        const std::string &px = y->px[(size_t)y->last_priced];
        er.setField(150, "F");
        er.setField(39, "2");
        er.setField(32, qty);
        er.setField(31, px);
        er.setField(151, "0");
        er.setField(14, qty);
        er.setField(6, px);
        fills++;
        if (fills_log) {
            std::fprintf(fills_log, "%s,%s,%s,%s,%s,%s,%s,%ld,%s\n", now_ts().c_str(),
                         sid.getTargetCompID().getString().c_str(), cl.c_str(), acct.c_str(),
                         sym.c_str(), side.c_str(), qty.c_str(), y->last_priced, px.c_str());
            std::fflush(fills_log);
        }
        send(er);
    }

    void fromApp(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::UnsupportedMessageType) override
    {
        std::string type = m.getHeader().getField(35);
        std::lock_guard<std::mutex> l(mu);
        if (type == "V") {
            on_md_request(m);
        } else if (type == "D") {
            on_order(m);
        } else if (type == "F") {
            FIX::Message r;
            r.getHeader().setField(35, "9");
            r.setField(37, "NONE");
            r.setField(11, m.getField(11));
            r.setField(41, m.getField(41));
            r.setField(39, "2");
            r.setField(434, "1");
            r.setField(102, "0");
            send(r);
        } else {
            std::fprintf(stderr, "%s: unexpected 35=%s\n", who, type.c_str());
            errors++;
        }
    }

    // One bar: an X per symbol (the entry as a group: QuickFIX orders a
    // plain message's body by tag), then the barrier's TestRequest.
    void send_bar(long i)
    {
        for (auto &y : syms) {
            if ((size_t)i >= y.px.size())
                continue;
            FIX44::MarketDataIncrementalRefresh x;
            x.setField(262, y.md_req);
            FIX44::MarketDataIncrementalRefresh::NoMDEntries e;
            e.setField(279, "0");
            e.setField(269, "2");
            e.setField(55, y.name);
            e.setField(278, std::to_string(i));
            if (!y.px[(size_t)i].empty()) {
                e.setField(270, y.px[(size_t)i]);
                std::lock_guard<std::mutex> l(mu);
                y.last_priced = i; // orders from here on fill at this close
            }
            e.setField(271, "1");
            x.addGroup(e);
            send(x);
        }
        FIX44::TestRequest tr(FIX::TestReqID("bar-" + std::to_string(i)));
        send(tr);
    }

    void session_status(const char *st)
    {
        FIX::Message h;
        h.getHeader().setField(35, "h");
        h.setField(336, "REPLAY");
        h.setField(340, st);
        send(h);
    }

    // The whole replay on an acceptor made from settings (QuickFIX's
    // SessionSettings text, one session): listening() is called once it
    // accepts; every bar of every symbol in lockstep; then 340=3 and the
    // trader's Logout, all within timeout_s.  Returns 0 when the run went
    // through to the Logout, 1 otherwise (the reason on stderr); sent,
    // loop_s and the counters are set either way.
    int replay(const std::string &settings, double timeout_s, const std::function<void()> &listening)
    {
        long bars = 0;
        for (auto &y : syms)
            bars = std::max(bars, (long)y.px.size());
        int rc = 0;
        try {
            std::stringstream cfg(settings);
            FIX::SessionSettings ss(cfg);
            FIX::FileStoreFactory store(ss);
            FIX::SocketAcceptor acceptor(*this, store, ss);
            acceptor.start();
            listening();
            auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds((long long)(timeout_s * 1000));
            std::unique_lock<std::mutex> l(mu);
            auto all_subscribed = [&] {
                for (auto &y : syms)
                    if (!y.subscribed)
                        return false;
                return logged_on;
            };
            if (!cv.wait_until(l, deadline, all_subscribed)) {
                std::fprintf(stderr, "%s: no logon and subscription of every symbol\n", who);
                rc = 1;
            }
            l.unlock();
            if (rc == 0) {
                auto t0 = std::chrono::steady_clock::now();
                session_status("2");
                for (long i = 0; i < bars && rc == 0; i++) {
                    send_bar(i);
                    sent++;
                    l.lock();
                    if (!cv.wait_until(l, deadline, [&] { return acked >= i || logged_out; }) ||
                        acked < i) {
                        std::fprintf(stderr, "%s: no answer to bar-%ld\n", who, i);
                        rc = 1;
                    }
                    l.unlock();
                }
                loop_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                             .count();
                session_status("3");
                l.lock();
                if (!cv.wait_until(l, deadline, [&] { return logged_out; })) {
                    std::fprintf(stderr, "%s: the trader did not log out\n", who);
                    rc = 1;
                }
                l.unlock();
            }
            acceptor.stop();
        } catch (std::exception &e) {
            std::fprintf(stderr, "%s: %s\n", who, e.what());
            rc = 1;
        }
        return rc;
    }
};

} // namespace tw_qf

#endif
