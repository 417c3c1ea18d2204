// A QuickFIX 1.15 acceptor that plays the venue of live.md ("The venue
// protocol (FIX 4.4)") for the trader's tests: a FIX engine that is not
// ours on the other end of `tickwire trade`.  The venue itself is
// tools/common/qf_venue.h (shared with bench/live's QuickFIX pair); this
// is its command line, with a fills log.
//
// Prices are the dataset's exact decimal texts, one line per bar in a text
// file (an empty line is a gap bar: the entry goes without 270), written
// by the test (numpy's shortest round-trip positional form); fills are at
// the text of the last priced bar sent for the symbol.
//
// usage: qf_venue --port P --target COMPID --data SYM=FILE ... --fills FILE
//                 [--sender VENUE] [--timeout S]
// Prints "qf_venue: listening on PORT" once it accepts, and at the end
// "qf_venue: bars=N orders=N fills=N rejects=N barrier_acks=N errors=N";
// exit 0 when the run went through to the trader's Logout without errors.
#include "common/qf_venue.h"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

int main(int argc, char **argv)
{
    tw_qf::Venue app;
    std::string sender = "VENUE", target, fills;
    int port = 0;
    double timeout = 600;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string a = argv[i], v = argv[i + 1];
        if (a == "--port") {
            port = std::atoi(v.c_str());
        } else if (a == "--target") {
            target = v;
        } else if (a == "--sender") {
            sender = v;
        } else if (a == "--fills") {
            fills = v;
        } else if (a == "--timeout") {
            timeout = std::atof(v.c_str());
        } else if (a == "--data") {
            size_t eq = v.find('=');
            tw_qf::Symbol y;
            y.name = v.substr(0, eq);
            y.px = tw_qf::read_lines(v.substr(eq + 1));
            app.syms.push_back(y);
        } else {
            std::fprintf(stderr, "qf_venue: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (!port || target.empty() || app.syms.empty() || fills.empty()) {
        std::fprintf(stderr, "usage: qf_venue --port P --target ID --data SYM=FILE --fills FILE\n");
        return 2;
    }
    app.fills_log = std::fopen(fills.c_str(), "w");
    if (!app.fills_log) {
        std::fprintf(stderr, "qf_venue: --fills %s: cannot write\n", fills.c_str());
        return 2;
    }
    std::fprintf(app.fills_log, "time,session,clordid,account,symbol,side,qty,bar,price\n");
    std::fflush(app.fills_log);
    std::stringstream cfg;
    cfg << "[DEFAULT]\nConnectionType=acceptor\nStartTime=00:00:00\nEndTime=00:00:00\n"
        << "UseDataDictionary=N\nResetOnLogon=N\nResetOnLogout=N\nResetOnDisconnect=N\n"
        << "FileStorePath=qfvenue-store\nSocketAcceptPort=" << port << "\nSocketReuseAddress=Y\n"
        << "SocketNodelay=Y\n[SESSION]\nBeginString=FIX.4.4\nSenderCompID=" << sender
        << "\nTargetCompID=" << target << "\n";
    int rc = app.replay(cfg.str(), timeout, [&] {
        std::printf("qf_venue: listening on %d\n", port);
        std::fflush(stdout);
    });
    std::fclose(app.fills_log);
    std::printf("qf_venue: bars=%ld orders=%ld fills=%ld rejects=%ld barrier_acks=%ld errors=%ld\n",
                app.sent, app.orders, app.fills, app.rejects, app.acks, app.errors);
    return rc || app.errors ? 1 : 0;
}
