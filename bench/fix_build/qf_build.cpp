// QuickFIX side of bench/fix_build: the same NewOrderSingle built with
// FIX::Message (header and body fields set per message, as an application
// does) and serialised with toString(), n times; the C side times it (the
// project's clock module).  The last message is copied to out so the
// caller can check that it frames.
#include <quickfix/Message.h>

#include <algorithm>
#include <cstring>
#include <string>

extern "C" void tw_qf_build_loop(int n, char *out, size_t cap, size_t *len);

extern "C" void tw_qf_build_loop(int n, char *out, size_t cap, size_t *len)
{
    std::string last;
    for (int i = 0; i < n; i++) {
        FIX::Message m;
        FIX::Header &h = m.getHeader();
        h.setField(8, "FIX.4.4");
        h.setField(35, "D");
        h.setField(49, "TICKWIRE");
        h.setField(56, "VENUE");
        h.setField(34, std::to_string(i + 1));
        h.setField(52, "20260102-03:04:05.000");
        m.setField(11, std::to_string(i + 1));
        m.setField(21, "1");
        m.setField(55, "EURUSD");
        m.setField(54, "1");
        m.setField(60, "20260102-03:04:05.000");
        m.setField(38, "1000000");
        m.setField(40, "2");
        m.setField(44, "1.08725");
        m.setField(59, "0");
        last = m.toString();
    }
    *len = std::min(last.size(), cap);
    std::memcpy(out, last.data(), *len);
}
