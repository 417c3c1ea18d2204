// QuickFIX initiator for the interop tests: logs on to our acceptor, sends
// N NewOrderSingle (ClOrdID 1..N, at most WINDOW unanswered), waits for an
// ExecutionReport for each, idles IDLE seconds (heartbeats), logs out and
// writes RESULTS_FILE:
//   ers_new N / ers_possdup N / dup_new N / missing N / heartbeats_rcvd N /
//   logons N / done 0|1
// Optionally skips its own outgoing sequence numbers after order GAP_AT.
//
// usage: qf_initiator PORT RESULTS N [GAP_AT [IDLE_S [HB_S [BEGINSTRING]]]]
#include <quickfix/Application.h>
#include <quickfix/FileLog.h>
#include <quickfix/FileStore.h>
#include <quickfix/MessageStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketInitiator.h>

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>

#include "qf_common.h"

class App : public FIX::Application {
public:
    std::mutex mu;
    std::condition_variable cv;
    std::map<long, int> new_count, possdup_count;
    long received = 0, logons = 0, heartbeats = 0;
    bool logged_on = false;
    FIX::SessionID sid;

    void onCreate(const FIX::SessionID &) override {}
    void onLogon(const FIX::SessionID &s) override
    {
        std::lock_guard<std::mutex> g(mu);
        sid = s;
        logged_on = true;
        logons++;
        cv.notify_all();
    }
    void onLogout(const FIX::SessionID &) override
    {
        std::lock_guard<std::mutex> g(mu);
        logged_on = false;
        cv.notify_all();
    }
    void toAdmin(FIX::Message &, const FIX::SessionID &) override {}
    void toApp(FIX::Message &, const FIX::SessionID &) throw(FIX::DoNotSend) override {}
    void fromAdmin(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::RejectLogon) override
    {
        if (m.getHeader().getField(35) == "0") {
            std::lock_guard<std::mutex> g(mu);
            heartbeats++;
        }
    }
    void fromApp(const FIX::Message &m, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::UnsupportedMessageType) override
    {
        if (m.getHeader().getField(35) != "8")
            return;
        long id = std::atol(m.getField(11).c_str());
        std::lock_guard<std::mutex> g(mu);
        bool first = !new_count.count(id) && !possdup_count.count(id);
        (qf_possdup(m) ? possdup_count : new_count)[id]++;
        if (first)
            received++;
        cv.notify_all();
    }
};

int main(int argc, char **argv)
{
    if (argc < 4) {
        std::fprintf(stderr, "usage: qf_initiator PORT RESULTS N [GAP_AT [IDLE_S [HB_S]]]\n");
        return 2;
    }
    std::signal(SIGTERM, qf_on_signal);
    long n = std::atol(argv[3]);
    long gap_at = argc > 4 ? std::atol(argv[4]) : 0;
    int idle_s = argc > 5 ? std::atoi(argv[5]) : 0;
    int hb = argc > 6 ? std::atoi(argv[6]) : 30;
    const long window = 64;
    App app;
    bool done = false;
    try {
        std::istringstream cfg(qf_settings(false, std::atoi(argv[1]), "QF", "TW", hb,
                                           argc > 7 ? argv[7] : "FIX.4.4"));
        FIX::SessionSettings settings(cfg);
        // A file store, not MemoryStore: MemoryStore::get() starts at
        // find(BeginSeqNo), so a resend range whose first number was skipped
        // comes back empty and QuickFIX gap-fills over stored messages.
        FIX::FileStoreFactory store(settings);
        // TW_QF_LOG=dir keeps QuickFIX's message log there (for debugging).
        const char *logdir = std::getenv("TW_QF_LOG");
        FIX::FileLogFactory logs(settings);
        std::unique_ptr<FIX::SocketInitiator> holder(
            logdir ? new FIX::SocketInitiator(app, store, settings, logs)
                   : new FIX::SocketInitiator(app, store, settings));
        FIX::SocketInitiator &initiator = *holder;
        initiator.start();
        std::unique_lock<std::mutex> lk(app.mu);
        // Generous bounds: they only end a broken run, never pace a good one.
        if (!app.cv.wait_for(lk, std::chrono::seconds(30), [&] { return app.logged_on; })) {
            std::fprintf(stderr, "qf_initiator: no logon\n");
        } else {
            long sent = 0;
            while (!qf_stop && app.received < n) {
                while (sent < n && sent - app.received < window) {
                    sent++;
                    FIX::Message m;
                    m.getHeader().setField(35, "D");
                    m.setField(11, std::to_string(sent));
                    m.setField(21, "1");
                    m.setField(55, "EURUSD");
                    m.setField(54, sent % 2 ? "1" : "2");
                    m.setField(60, "20260102-03:04:05.000");
                    m.setField(38, std::to_string(100 + sent % 7));
                    m.setField(40, "2");
                    m.setField(44, "1.08725");
                    FIX::SessionID sid = app.sid;
                    lk.unlock();
                    FIX::Session::sendToTarget(m, sid);
                    if (sent == gap_at) {
                        FIX::Session *s = FIX::Session::lookupSession(sid);
                        s->setNextSenderMsgSeqNum(s->getExpectedSenderNum() + 3);
                    }
                    lk.lock();
                }
                if (!app.cv.wait_for(lk, std::chrono::seconds(60), [&] {
                        return app.received >= n || (sent < n && sent - app.received < window);
                    })) {
                    std::fprintf(stderr, "qf_initiator: stalled at %ld/%ld\n", app.received, n);
                    break;
                }
            }
            done = app.received >= n;
            lk.unlock();
            for (int i = 0; i < idle_s * 10 && !qf_stop; i++)
                usleep(100000);
            lk.lock();
        }
        lk.unlock();
        initiator.stop(); // sends Logout and waits for the answer
    } catch (std::exception &e) {
        std::fprintf(stderr, "qf_initiator: %s\n", e.what());
        return 1;
    }
    std::lock_guard<std::mutex> g(app.mu);
    long dup_new = 0, missing = 0, pd = 0, nw = 0;
    for (auto &kv : app.new_count) {
        nw += kv.second;
        if (kv.second > 1)
            dup_new += kv.second - 1;
    }
    for (auto &kv : app.possdup_count)
        pd += kv.second;
    for (long i = 1; i <= n; i++)
        if (!app.new_count.count(i) && !app.possdup_count.count(i))
            missing++;
    std::ofstream out(argv[2]);
    out << "ers_new " << nw << "\ners_possdup " << pd << "\ndup_new " << dup_new << "\nmissing "
        << missing << "\nheartbeats_rcvd " << app.heartbeats << "\nlogons " << app.logons
        << "\ndone " << (done ? 1 : 0) << "\n";
    return done ? 0 : 1;
}
