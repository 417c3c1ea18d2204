// Shared bits of the QuickFIX peers used by the interop tests: settings
// written from arguments (no dictionary: UseDataDictionary=N, as Debian
// ships no FIX44.xml) and a stop flag set by SIGTERM/SIGINT.
#ifndef TW_QF_COMMON_H
#define TW_QF_COMMON_H

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

static volatile std::sig_atomic_t qf_stop = 0;
static void qf_on_signal(int) { qf_stop = 1; }

// Builds the QuickFIX settings text for one session (FIX.4.2 or FIX.4.4).
static std::string qf_settings(bool acceptor, int port, const std::string &sender,
                               const std::string &target, int hb,
                               const std::string &begin = "FIX.4.4")
{
    std::ostringstream s;
    s << "[DEFAULT]\n"
      << "ConnectionType=" << (acceptor ? "acceptor" : "initiator") << "\n"
      << "StartTime=00:00:00\nEndTime=00:00:00\n"
      << "UseDataDictionary=N\n"
      << "ResetOnLogon=N\nResetOnLogout=N\nResetOnDisconnect=N\n"
      << "ReconnectInterval=1\nFileStorePath=qfstore\n";
    if (const char *logdir = std::getenv("TW_QF_LOG"))
        s << "FileLogPath=" << logdir << "\n";
    s
      << "[SESSION]\nBeginString=" << begin << "\n"
      << "SenderCompID=" << sender << "\nTargetCompID=" << target << "\n";
    if (acceptor)
        s << "SocketAcceptPort=" << port << "\nSocketAcceptHost=127.0.0.1\n";
    else
        s << "SocketConnectHost=127.0.0.1\nSocketConnectPort=" << port << "\nHeartBtInt=" << hb
          << "\n";
    return s.str();
}

static bool qf_possdup(const FIX::Message &m)
{
    return m.getHeader().isSetField(43) && m.getHeader().getField(43) == "Y";
}

#endif
