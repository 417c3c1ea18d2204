// QuickFIX acceptor for the interop tests: answers every NewOrderSingle
// with a filled ExecutionReport and counts ClOrdIDs, split into new and
// PossDup arrivals, so the driver can check that no order was lost and
// none arrived twice as new.  Optionally skips its own outgoing sequence
// numbers once (a gap the counterparty must resolve).
//
// usage: qf_acceptor PORT RESULTS_FILE [GAP_AT_ORDER [BEGINSTRING]]
// Runs until SIGTERM, then writes RESULTS_FILE:
//   orders_new N / orders_possdup N / dup_new N / max_clordid N /
//   missing N (ClOrdIDs 1..max never seen) / logons N
#include <quickfix/Application.h>
#include <quickfix/FileLog.h>
#include <quickfix/FileStore.h>
#include <quickfix/MessageStore.h>
#include <quickfix/Session.h>
#include <quickfix/SessionSettings.h>
#include <quickfix/SocketAcceptor.h>

#include <unistd.h>

#include <map>
#include <memory>
#include <mutex>

#include "qf_common.h"

class App : public FIX::Application {
public:
    long gap_at = 0;
    std::mutex mu;
    std::map<long, int> new_count, possdup_count;
    long orders = 0, exec_id = 0, logons = 0;

    void onCreate(const FIX::SessionID &) override {}
    void onLogon(const FIX::SessionID &) override
    {
        std::lock_guard<std::mutex> g(mu);
        logons++;
    }
    void onLogout(const FIX::SessionID &) override {}
    void toAdmin(FIX::Message &, const FIX::SessionID &) override {}
    void toApp(FIX::Message &, const FIX::SessionID &) throw(FIX::DoNotSend) override {}
    void fromAdmin(const FIX::Message &, const FIX::SessionID &) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::RejectLogon) override
    {
    }
    void fromApp(const FIX::Message &m, const FIX::SessionID &sid) throw(
        FIX::FieldNotFound, FIX::IncorrectDataFormat, FIX::IncorrectTagValue,
        FIX::UnsupportedMessageType) override
    {
        if (m.getHeader().getField(35) != "D")
            return;
        std::string cl = m.getField(11);
        long id = std::atol(cl.c_str());
        bool pd = qf_possdup(m);
        bool seen;
        {
            std::lock_guard<std::mutex> g(mu);
            seen = new_count.count(id) || possdup_count.count(id);
            (pd ? possdup_count : new_count)[id]++;
            orders++;
            if (gap_at && orders == gap_at) {
                FIX::Session *s = FIX::Session::lookupSession(sid);
                s->setNextSenderMsgSeqNum(s->getExpectedSenderNum() + 3);
            }
        }
        if (seen)
            return; // a PossDup copy of one already executed: no second fill
        FIX::Message er;
        er.getHeader().setField(35, "8");
        er.setField(37, "O" + cl);
        er.setField(17, "E" + std::to_string(++exec_id));
        // FIX 4.2 reports a fill as ExecType 2 with ExecTransType 0; 4.4 as F.
        bool fix42 = sid.getBeginString().getValue() == "FIX.4.2";
        if (fix42)
            er.setField(20, "0");
        er.setField(150, fix42 ? "2" : "F");
        er.setField(39, "2");
        er.setField(11, cl);
        er.setField(55, m.getField(55));
        er.setField(54, m.getField(54));
        er.setField(38, m.getField(38));
        er.setField(32, m.getField(38));
        er.setField(31, m.isSetField(44) ? m.getField(44) : "1");
        er.setField(151, "0");
        er.setField(14, m.getField(38));
        er.setField(6, m.isSetField(44) ? m.getField(44) : "1");
        FIX::Session::sendToTarget(er, sid);
    }
};

int main(int argc, char **argv)
{
    if (argc < 3) {
        std::fprintf(stderr, "usage: qf_acceptor PORT RESULTS [GAP_AT]\n");
        return 2;
    }
    std::signal(SIGTERM, qf_on_signal);
    std::signal(SIGINT, qf_on_signal);
    App app;
    if (argc > 3)
        app.gap_at = std::atol(argv[3]);
    try {
        std::istringstream cfg(
            qf_settings(true, std::atoi(argv[1]), "QF", "TW", 0, argc > 4 ? argv[4] : "FIX.4.4"));
        FIX::SessionSettings settings(cfg);
        // A file store, not MemoryStore: MemoryStore::get() starts at
        // find(BeginSeqNo), so a resend range whose first number was skipped
        // comes back empty and QuickFIX gap-fills over stored messages.
        FIX::FileStoreFactory store(settings);
        // TW_QF_LOG=dir keeps QuickFIX's message log there (for debugging).
        const char *logdir = std::getenv("TW_QF_LOG");
        FIX::FileLogFactory logs(settings);
        std::unique_ptr<FIX::SocketAcceptor> holder(
            logdir ? new FIX::SocketAcceptor(app, store, settings, logs)
                   : new FIX::SocketAcceptor(app, store, settings));
        FIX::SocketAcceptor &acceptor = *holder;
        acceptor.start();
        std::printf("qf_acceptor: listening on %s\n", argv[1]);
        std::fflush(stdout);
        while (!qf_stop)
            usleep(20000);
        acceptor.stop(true);
    } catch (std::exception &e) {
        std::fprintf(stderr, "qf_acceptor: %s\n", e.what());
        return 1;
    }
    std::lock_guard<std::mutex> g(app.mu);
    long max_id = 0, dup_new = 0, missing = 0;
    for (auto &kv : app.new_count) {
        max_id = std::max(max_id, kv.first);
        if (kv.second > 1)
            dup_new += kv.second - 1;
    }
    for (auto &kv : app.possdup_count)
        max_id = std::max(max_id, kv.first);
    for (long i = 1; i <= max_id; i++)
        if (!app.new_count.count(i) && !app.possdup_count.count(i))
            missing++;
    long pd = 0;
    for (auto &kv : app.possdup_count)
        pd += kv.second;
    long nw = 0;
    for (auto &kv : app.new_count)
        nw += kv.second;
    std::ofstream out(argv[2]);
    out << "orders_new " << nw << "\norders_possdup " << pd << "\ndup_new " << dup_new
        << "\nmax_clordid " << max_id << "\nmissing " << missing << "\nlogons " << app.logons
        << "\n";
    return 0;
}
