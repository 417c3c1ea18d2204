// QuickFIX side of `tickwire bench fix`: the same messages parsed by
// FIX::Message from a string, as QuickFIX does by default without a data
// dictionary (BodyLength and CheckSum validated).  C-callable so the
// benchmark itself stays C.
#include <cstddef>
#include <cstring>
#include <string>

#include <quickfix/Message.h>

extern "C" {
int tw__qf_get(const char *msg, size_t len, int tag, char *out, size_t cap);
long tw__qf_parse_loop(const char *msg, size_t len, long iters);
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
