/* The parser's two paths against each other: the AVX-512 block parser
 * (used when the CPU has VBMI2) and the generic one must return the same
 * code and the same fields for every input.  Random messages of 1 to ~60
 * blocks with tags of 1 to 7 digits (so tags straddle block boundaries and
 * long tags take the fallback), values holding '=' and high bytes, then
 * random corruptions; each against a guard page. */
#include "fix/fix_internal.h"
#include "fix_test.h"


static size_t random_message(char *b, size_t cap)
{
    size_t n = 0;
    unsigned nfields = 3 + fix_rnd() % (fix_rnd() % 4 == 0 ? 400 : 40);
    for (unsigned i = 0; i < nfields && n + 64 < cap; i++) {
        unsigned tag;
        switch (i) {
        case 0: tag = 8; break;
        case 1: tag = 9; break;
        case 2: tag = 35; break;
        default: {
            unsigned digits = fix_rnd() % 256 == 0 ? 5 + fix_rnd() % 3 : 1 + fix_rnd() % 4;
            static const unsigned lim[] = { 1, 10, 100, 1000, 10000, 100000, 1000000, 10000000 };
            tag = lim[digits - 1] + fix_rnd() % (lim[digits] - lim[digits - 1]);
        }
        }
        n += (size_t)snprintf(b + n, cap - n, "%u=", tag);
        unsigned vlen = 1 + fix_rnd() % (fix_rnd() % 8 == 0 ? 60 : 12);
        for (unsigned k = 0; k < vlen; k++) {
            char c = (char)(0x20 + fix_rnd() % 0x5f);
            if (fix_rnd() % 20 == 0)
                c = '=';
            if (fix_rnd() % 40 == 0)
                c = (char)(0x80 + fix_rnd() % 0x80);
            b[n++] = c;
        }
        b[n++] = TW_FIX_SOH;
    }
    return n;
}

static void corrupt(char *b, size_t n)
{
    static const char pick[] = { TW_FIX_SOH, '=', '0', '5', 'x', (char)0x81, 0 };
    unsigned k = 1 + fix_rnd() % 3;
    for (unsigned i = 0; i < k; i++)
        b[fix_rnd() % n] = pick[fix_rnd() % sizeof(pick)];
}

static int same(const tw_fix_msg *a, int ra, const tw_fix_msg *b, int rb)
{
    if (ra != rb)
        return 0;
    if (ra != 0)
        return 1; /* errors: the fields written before it are unspecified */
    if (a->count != b->count || a->msg_type != b->msg_type || a->msg_type_len != b->msg_type_len)
        return 0;
    for (uint32_t i = 0; i < a->count; i++)
        if (a->fields[i].tag != b->fields[i].tag || a->fields[i].len != b->fields[i].len ||
            a->fields[i].val != b->fields[i].val)
            return 0;
    return 1;
}

int main(void)
{
    static char buf[1 << 15];
    static tw_fix_field fa[1024], fb[1024];
    long fast_used = 0, total = 0;
    for (int it = 0; it < 6000; it++) {
        size_t n = random_message(buf, sizeof(buf));
        if (it % 2)
            corrupt(buf, n);
        if (it % 7 == 0)
            n = 1 + fix_rnd() % n;
        guard g = guard_alloc(buf, n);
        uint32_t cap = it % 5 == 0 ? 1 + fix_rnd() % 64 : 1024;
        tw_fix_msg a = { .fields = fa, .cap = cap }, b = { .fields = fb, .cap = cap };
        int ra = tw_fix_parse(g.p, n, &a);
        int rb = tw__fix_parse_generic(g.p, n, &b, NULL);
        if (!same(&a, ra, &b, rb)) {
            fprintf(stderr, "iteration %d (len %zu, cap %u): fast rc %d count %u, generic rc %d count %u\n",
                    it, n, cap, ra, a.count, rb, b.count);
            tw_check_failures++;
        }
        tw_fix_msg c = { .fields = fa, .cap = cap };
        fast_used += tw__fix_fast_parse && tw__fix_parse_avx512(g.p, n, &c) == 0;
        total++;
        guard_free(&g);
        if (tw_check_failures > 5)
            break;
    }
    printf("parse paths agree on %ld inputs (fast path %s, took %ld of them)\n", total,
           tw__fix_fast_parse ? "on" : "off (no AVX-512 VBMI2 or capped by TW_FIX_ISA)", fast_used);
    if (tw__fix_fast_parse && fast_used < total / 10) {
        fprintf(stderr, "the fast path took too few inputs to have been tested\n");
        tw_check_failures++;
    }
    return tw_check_done("fix parse paths");
}
