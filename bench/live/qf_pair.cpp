// The QuickFIX side of `tickwire bench live`'s throughput goal (live.md,
// "Parity and latency budget"): a QuickFIX 1.15 venue and a QuickFIX 1.15 trader doing the
// lockstep replay of live.md ("The venue protocol (FIX 4.4)", point 6)
// over kernel TCP on loopback, two processes, so that the bench can set
// `tickwire exchange --lockstep` + `tickwire trade` next to a pair of
// FIX engines that are not ours, on the same bars, in the same run.
//
// It knows nothing of tickwire's code.  The venue is
// tools/common/qf_venue.h (the one tests/trade/qf_venue.cpp runs); the
// trader is here.  Both sides keep QuickFIX's FileStore (as tickwire's
// sessions keep their stores) and no message log; UseDataDictionary=N.
//
//   venue (parent process, SocketAcceptor): after Logon and the trader's
//     MarketDataRequest, 340=2, then per bar i one X (262, 268=1, 279=0
//     269=2 55 278=i [270] 271=1) and TestRequest 112=bar-<i>; bar i+1
//     only once the Heartbeat 112=bar-<i> is in.  NewOrderSingle: filled
//     at once at the last priced close (150=F 39=2), or 103=2 before one.
//     After the last bar 340=3, then the trader's Logout.
//   trader (child process, SocketInitiator): on Logon one V for the
//     symbol; on each X, per instance with lookback L, the signal
//     sign(close[i] - close[i-L]); a change of position is a market order
//     at once, inside the X's callback (1 unit from flat, 2 on a flip),
//     so it is written before QuickFIX's session thread reaches the
//     TestRequest and answers it: that keeps the barrier.  On 340=3 it
//     logs out.
//
// usage: tw_bench_qf_pair --bars FILE --dir DIR [--lookbacks L,L,...] [--timeout S]
//   FILE: one price per line (decimal text; empty: a gap bar).
// Prints one line, and exits 0 when every bar was answered and every
// order filled:
//   qf_pair: bars=N loop_s=S bars_per_s=R orders=N fills=N rejects=N
//   (loop_s: from 340=2 to the last bar's Heartbeat, the venue's clock)
#include "common/qf_venue.h"

#include <quickfix/SocketInitiator.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using tw_qf::now_ts;

bool send_to(FIX::Message &m, const FIX::SessionID &sid, long &errors)
{
    return tw_qf::send_to(m, sid, errors, "qf_pair: trader");
}

// ---- the trader ---------------------------------------------------------------------------

struct Instance {
    long lookback;
    int pos = 0;
    std::string name;
};

struct Trader : public FIX::Application {
    std::mutex mu;
    std::condition_variable cv;
    FIX::SessionID sid;
    std::vector<Instance> inst;
    std::vector<double> close; // the bars seen (NaN: gap)
    bool logged_out = false;
    long orders = 0, fills = 0, rejects = 0, errors = 0, n_ord = 0;

    void onCreate(const FIX::SessionID &) override {}
    void onLogon(const FIX::SessionID &id) override
    {
        sid = id;
        FIX::Message v;
        v.getHeader().setField(35, "V");
        v.setField(262, "md-1");
        v.setField(263, "1");
        v.setField(264, "1");
        v.setField(265, "1");
        v.setField(267, "1");
        v.setField(269, "2");
        v.setField(146, "1");
        v.setField(55, "AAA");
        send_to(v, sid, errors);
    }
    void onLogout(const FIX::SessionID &) override
    {
        std::lock_guard<std::mutex> l(mu);
        logged_out = true;
        cv.notify_all();
    }
    void toAdmin(FIX::Message &, const FIX::SessionID &) override {}
    void toApp(FIX::Message &, const FIX::SessionID &) throw(FIX::DoNotSend) override {}
    void fromAdmin(const FIX::Message &, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::RejectLogon) override
    {
    }

    void order(Instance &in, char side, int qty)
    {
        FIX::Message d;
        d.getHeader().setField(35, "D");
        d.setField(11, "Q" + std::to_string(++n_ord));
        d.setField(1, in.name);
        d.setField(55, "AAA");
        d.setField(54, std::string(1, side));
        d.setField(38, std::to_string(qty));
        d.setField(40, "1");
        d.setField(60, now_ts());
        if (send_to(d, sid, errors))
            orders++;
    }

    // The decision on bar i, in the X's callback: the order is out before
    // the session thread takes the TestRequest behind the X.
    void on_bar(long i, double c)
    {
        if (i != (long)close.size()) {
            std::fprintf(stderr, "qf_pair: trader: bar %ld after %zu bars\n", i, close.size());
            errors++;
            return;
        }
        close.push_back(c);
        if (std::isnan(c))
            return;
        for (auto &in : inst) {
            if (i < in.lookback || std::isnan(close[(size_t)(i - in.lookback)]))
                continue;
            double d = c - close[(size_t)(i - in.lookback)];
            int want = d > 0 ? 1 : d < 0 ? -1 : in.pos;
            if (want == in.pos)
                continue;
            order(in, want > 0 ? '1' : '2', in.pos == 0 ? 1 : 2);
            in.pos = want;
        }
    }

    void fromApp(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::UnsupportedMessageType) override
    {
        std::string type = m.getHeader().getField(35);
        if (type == "X") {
            double c = m.isSetField(270) ? std::strtod(m.getField(270).c_str(), nullptr) : NAN;
            on_bar(std::atol(m.getField(278).c_str()), c);
        } else if (type == "8") {
            std::string et = m.getField(150);
            if (et == "F")
                fills++;
            else if (et == "8")
                rejects++;
        } else if (type == "h") {
            if (m.getField(340) == "3") {
                FIX::Session *s = FIX::Session::lookupSession(sid);
                if (s)
                    s->logout("replay over");
            }
        } else {
            std::fprintf(stderr, "qf_pair: trader: unexpected 35=%s\n", type.c_str());
            errors++;
        }
    }
};

std::string settings(const char *type, int port, const std::string &dir, const char *sender,
                     const char *target)
{
    std::stringstream c;
    c << "[DEFAULT]\nConnectionType=" << type << "\nStartTime=00:00:00\nEndTime=00:00:00\n"
      << "UseDataDictionary=N\nResetOnLogon=Y\nHeartBtInt=30\nReconnectInterval=1\n"
      << "FileStorePath=" << dir << "/qf-" << type << "\nSocketNodelay=Y\n"
      << "SocketReuseAddress=Y\n";
    if (type[0] == 'a')
        c << "SocketAcceptPort=" << port << "\n";
    else
        c << "SocketConnectHost=127.0.0.1\nSocketConnectPort=" << port << "\n";
    c << "[SESSION]\nBeginString=FIX.4.4\nSenderCompID=" << sender << "\nTargetCompID=" << target
      << "\n";
    return c.str();
}

int free_port()
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof(a);
    int port = 0;
    if (fd >= 0 && bind(fd, (sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(fd, (sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

int run_trader(int port, const std::string &dir, const std::vector<long> &lookbacks, double timeout)
{
    Trader app;
    for (size_t k = 0; k < lookbacks.size(); k++) {
        Instance in;
        in.lookback = lookbacks[k];
        in.name = "q." + std::to_string(k);
        app.inst.push_back(in);
    }
    int rc = 0;
    try {
        std::stringstream cfg(settings("initiator", port, dir, "QFTRADER", "QFVENUE"));
        FIX::SessionSettings ss(cfg);
        FIX::FileStoreFactory store(ss);
        FIX::SocketInitiator ini(app, store, ss);
        ini.start();
        std::unique_lock<std::mutex> l(app.mu);
        auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds((long long)(timeout * 1000));
        if (!app.cv.wait_until(l, deadline, [&] { return app.logged_out; }))
            rc = 1;
        l.unlock();
        ini.stop();
    } catch (std::exception &e) {
        std::fprintf(stderr, "qf_pair: trader: %s\n", e.what());
        rc = 1;
    }
    std::printf("qf_trader: bars=%zu orders=%ld fills=%ld rejects=%ld errors=%ld\n",
                app.close.size(), app.orders, app.fills, app.rejects, app.errors);
    std::fflush(stdout);
    return rc || app.errors || app.fills + app.rejects != app.orders ? 1 : 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::string bars_path, dir;
    std::vector<long> lookbacks{3, 5};
    double timeout = 600;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--bars") {
            bars_path = v;
        } else if (a == "--dir") {
            dir = v;
        } else if (a == "--timeout") {
            timeout = std::atof(v.c_str());
        } else if (a == "--lookbacks") {
            lookbacks.clear();
            std::stringstream s(v);
            std::string x;
            while (std::getline(s, x, ','))
                lookbacks.push_back(std::atol(x.c_str()));
        } else {
            std::fprintf(stderr, "qf_pair: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    tw_qf::Venue app;
    app.who = "qf_pair: venue";
    tw_qf::Symbol y;
    y.name = "AAA";
    y.px = tw_qf::read_lines(bars_path);
    app.syms.push_back(y);
    int port = free_port();
    bool bad_lb = lookbacks.empty();
    for (long l : lookbacks)
        bad_lb |= l < 1;
    if (y.px.empty() || dir.empty() || !port || bad_lb) {
        std::fprintf(stderr, "usage: tw_bench_qf_pair --bars FILE --dir DIR [--lookbacks L,..] "
                             "[--timeout S] (FILE: one price a line, not empty)\n");
        return 2;
    }
    int go[2];
    if (pipe(go) != 0)
        return 1;
    std::fflush(stdout);
    pid_t child = fork();
    if (child < 0)
        return 1;
    if (child == 0) {
        // The trader: starts once the venue listens.
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        close(go[1]);
        char b;
        if (read(go[0], &b, 1) != 1)
            _exit(1);
        close(go[0]);
        _exit(run_trader(port, dir, lookbacks, timeout));
    }
    close(go[0]);
    int rc = app.replay(settings("acceptor", port, dir, "QFVENUE", "QFTRADER"), timeout, [&] {
        if (write(go[1], "g", 1) != 1)
            std::fprintf(stderr, "qf_pair: cannot start the trader\n");
        close(go[1]);
    });
    int st = 0;
    if (waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        std::fprintf(stderr, "qf_pair: the trader failed\n");
        rc = 1;
    }
    std::printf("qf_pair: bars=%ld loop_s=%.6f bars_per_s=%.1f orders=%ld fills=%ld rejects=%ld "
                "errors=%ld\n",
                app.sent, app.loop_s, app.loop_s > 0 ? (double)app.sent / app.loop_s : 0.0,
                app.orders, app.fills, app.rejects, app.errors);
    return rc || app.errors ? 1 : 0;
}
