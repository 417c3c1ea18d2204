/* Parser and framer: table-driven cases, every truncation, byte-by-byte
 * feeding, garbled input and resync, guard-page buffers, golden messages.
 * Usage: test_fix_parse tests/fix/golden/messages.fix */
#include "fix_test.h"

/* ---- tw_fix_parse: table of fragments ------------------------------------ */

struct parse_case {
    const char *in; /* '|' is SOH */
    int rc;
    int count;
    uint32_t tag2; /* tag and value of field index 2, checked when rc == 0 */
    const char *val2;
};

static const struct parse_case parse_cases[] = {
    { "8=FIX.4.2|9=5|35=0|10=000|", 0, 4, 35, "0" },
    { "35=D|11=a=b|", 0, 2, 0, NULL },            /* '=' inside a value */
    { "8=F|9=1|35=AE|1234567=x|", 0, 4, 35, "AE" }, /* 7-digit tag */
    { "8=F|9=1|35=0|12345678=x|", -EBADMSG, 0, 0, NULL }, /* 8 digits: too long */
    { "8=F|9=1|35=0|035=x|", -EBADMSG, 0, 0, NULL },     /* leading zero */
    { "8=F|9=1|35=0|=x|", -EBADMSG, 0, 0, NULL },        /* empty tag */
    { "8=F|9=1|35=0|58=|", -EBADMSG, 0, 0, NULL },       /* empty value */
    { "8=F|9=1|35=0|3a=x|", -EBADMSG, 0, 0, NULL },      /* tag not a number */
    { "8=F|9=1|35=0|3 =x|", -EBADMSG, 0, 0, NULL },
    { "8=F|9=1|35=0|/=x|", -EBADMSG, 0, 0, NULL },       /* '/' is just below '0' */
    { "8=F|9=1|35=0|:=x|", -EBADMSG, 0, 0, NULL },       /* ':' is just above '9' */
    { "8=F|9=1|35=0|58x|", -EBADMSG, 0, 0, NULL },       /* no '=' */
    { "8=F|9=1|35=0|58", -EBADMSG, 0, 0, NULL },         /* no final SOH */
    { "8=F|9=1|35=0|58=x", -EBADMSG, 0, 0, NULL },
    { "8=F|9=1|58=x|", -EBADMSG, 0, 0, NULL },           /* no MsgType */
    { "", -EBADMSG, 0, 0, NULL },
    { "|", -EBADMSG, 0, 0, NULL },
    { "35=0||", -EBADMSG, 0, 0, NULL },                  /* empty field */
    { "9999999=1|35=0|", 0, 2, 0, NULL },
    { "8=FIX.4.4|9=12|35=X|268=1|279=0|269=0|270=1.5|10=000|", 0, 8, 35, "X" },
};

static void test_parse_table(void)
{
    tw_fix_field f[16];
    for (size_t i = 0; i < TW_ARRAY_SIZE(parse_cases); i++) {
        const struct parse_case *c = &parse_cases[i];
        size_t len;
        char *s = soh(c->in, &len);
        guard g = guard_alloc(s, len);
        tw_fix_msg m = { .fields = f, .cap = 16 };
        tw_error err = { 0 };
        int rc = tw_fix_parse_ex(g.p, len, &m, &err);
        if (rc != c->rc)
            fprintf(stderr, "case %zu '%s': rc %d (%s)\n", i, c->in, rc, err.msg);
        CHECK_EQ(rc, c->rc);
        CHECK_EQ(tw_fix_parse(g.p, len, &m), c->rc);
        if (rc == 0) {
            CHECK_EQ(m.count, c->count);
            if (c->val2) {
                CHECK_EQ(m.fields[2].tag, c->tag2);
                CHECK(m.fields[2].len == strlen(c->val2) &&
                      memcmp(m.fields[2].val, c->val2, m.fields[2].len) == 0);
                CHECK(m.msg_type == m.fields[2].val);
            }
        } else {
            CHECK(err.msg[0] != 0);
        }
        guard_free(&g);
        free(s);
    }
    /* Capacity: exactly enough fields is fine, one fewer is -E2BIG. */
    size_t len;
    char *s = soh("8=F|9=1|35=0|1=a|2=b|", &len);
    tw_fix_msg m = { .fields = f, .cap = 5 };
    CHECK_EQ(tw_fix_parse(s, len, &m), 0);
    m.cap = 4;
    CHECK_EQ(tw_fix_parse(s, len, &m), -E2BIG);
    free(s);
}

/* Field views of a parse equal what a byte-at-a-time reference finds. */
static void check_against_reference(const char *msg, size_t len, const tw_fix_msg *m)
{
    uint32_t k = 0;
    size_t i = 0;
    while (i < len) {
        size_t eq = i;
        uint32_t tag = 0;
        while (msg[eq] != '=')
            tag = tag * 10 + (uint32_t)(msg[eq++] - '0');
        size_t end = eq + 1;
        while (msg[end] != TW_FIX_SOH)
            end++;
        CHECK(k < m->count);
        if (k >= m->count)
            return;
        CHECK_EQ(m->fields[k].tag, tag);
        CHECK(m->fields[k].val == msg + eq + 1);
        CHECK_EQ(m->fields[k].len, end - eq - 1);
        k++;
        i = end + 1;
    }
    CHECK_EQ(k, m->count);
}

/* ---- tw_fix_frame: table ------------------------------------------------- */

struct frame_case {
    const char *in;
    unsigned flags;
    int rc; /* > 0: consumed; or TW_FIX_GARBLED / TW_FIX_INCOMPLETE */
    size_t skip;
};

static const struct frame_case frame_cases[] = {
    { "", 0, TW_FIX_INCOMPLETE, 0 },
    { "8", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FI", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9=12", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9=5|3", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9=5|35=0|", 0, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9=5|35=0|10=16", 0, TW_FIX_INCOMPLETE, 0 },
    { "x8=FIX", 0, TW_FIX_GARBLED, 1 },
    { "hello 8=FI", 0, TW_FIX_GARBLED, 6 },       /* keep a partial candidate */
    { "hello world", 0, TW_FIX_GARBLED, 11 },     /* nothing to keep */
    { "8=FIY.4.2|", 0, TW_FIX_GARBLED, 10 },
    { "8=FIX.4.2|8=FIX.4.2|", 0, TW_FIX_GARBLED, 10 }, /* 9 must be second */
    { "8=FIX.4.2|9=x|", 0, TW_FIX_GARBLED, 14 },
    { "8=FIX.4.2|9=|", 0, TW_FIX_GARBLED, 13 },
    { "8=FIX.4.2|9=12345678|", 0, TW_FIX_GARBLED, 21 },
    { "8=FIX.4.2|9=9999999|35=0|", 0, TW_FIX_GARBLED, 25 }, /* above the limit */
    { "8=FIX.4.2|9=5|34=1|", 0, TW_FIX_GARBLED, 19 },  /* 35 must be third */
    { "8=FIX.4.2|9=5|35=0|10=161|", 0, 26, 0 },
    { "8=FIX.4.2|9=5|35=0|10=162|", 0, TW_FIX_GARBLED, 26 }, /* bad sum */
    { "8=FIX.4.2|9=5|35=0|10=162|", TW_FIX_NO_CHECKSUM, 26, 0 },
    { "8=FIX.4.2|9=6|35=0||10=161|", 0, TW_FIX_GARBLED, 27 }, /* wrong length */
    { "8=FIX.4.2|9=4|35=0|10=161|", 0, TW_FIX_GARBLED, 26 },
    { "8=FIX.4.2|9=4|35=0|10=160|", TW_FIX_NO_BODYLEN, 26, 0 },
    { "8=FIX.4.2|9=99|35=0|10=222|", TW_FIX_NO_BODYLEN, 27, 0 },
    { "8=FIX.4.2|9=99|35=0|10=221|", TW_FIX_NO_BODYLEN, TW_FIX_GARBLED, 27 },
    { "8=FIX.4.2|9=99|35=0|10=16", TW_FIX_NO_BODYLEN, TW_FIX_INCOMPLETE, 0 },
    { "8=FIX.4.2|9=5|35=0|10=1x1|", 0, TW_FIX_GARBLED, 26 },
    { "8=FIX.4.2|9=5|35=0|11=161|", 0, TW_FIX_GARBLED, 26 },
    { "8=FIX.4.2|9=5|35=0|10=161|8=FIX", 0, 26, 0 },   /* the rest waits */
    { "8=FIX.4.2|9=5|35=0|10=162|8=FIX", 0, TW_FIX_GARBLED, 26 },
};

static void test_frame_table(void)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(frame_cases); i++) {
        const struct frame_case *c = &frame_cases[i];
        size_t len, skip = 99;
        char *s = soh(c->in, &len);
        guard g = guard_alloc(s, len);
        tw_error err = { 0 };
        int rc = tw_fix_frame_ex(g.p, len, c->flags, &skip, &err);
        if (rc != c->rc || (rc == TW_FIX_GARBLED && skip != c->skip))
            fprintf(stderr, "frame case %zu '%s': rc %d skip %zu (%s)\n", i, c->in, rc, skip,
                    err.msg);
        CHECK_EQ(rc, c->rc);
        if (rc == TW_FIX_GARBLED) {
            CHECK_EQ(skip, c->skip);
            CHECK(skip >= 1);
            CHECK(err.msg[0] != 0);
        }
        size_t skip2 = 0;
        CHECK_EQ(tw_fix_frame(g.p, len, c->flags, &skip2), rc);
        if (rc == TW_FIX_GARBLED)
            CHECK_EQ(skip2, skip);
        guard_free(&g);
        free(s);
    }
}

/* ---- golden messages -------------------------------------------------------- */

static golden gold[GOLDEN_MAX];
static int ngold;

static void test_golden_frame_parse(void)
{
    tw_fix_field f[128];
    CHECK(ngold >= 19);
    for (int i = 0; i < ngold; i++) {
        guard g = guard_alloc(gold[i].p, gold[i].len);
        size_t skip = 0;
        tw_error err = { 0 };
        int rc = tw_fix_frame_ex(g.p, gold[i].len, 0, &skip, &err);
        if (rc != (int)gold[i].len)
            fprintf(stderr, "golden %d: frame %d (%s)\n", i, rc, err.msg);
        CHECK_EQ(rc, gold[i].len);
        CHECK_EQ(tw_fix_frame(g.p, gold[i].len, TW_FIX_NO_BODYLEN, &skip), gold[i].len);
        tw_fix_msg m = { .fields = f, .cap = 128 };
        CHECK_EQ(tw_fix_parse(g.p, gold[i].len, &m), 0);
        CHECK_EQ(m.fields[0].tag, 8);
        CHECK_EQ(m.fields[1].tag, 9);
        CHECK_EQ(m.fields[2].tag, 35);
        CHECK_EQ(m.fields[m.count - 1].tag, 10);
        check_against_reference(g.p, gold[i].len, &m);
        /* The last byte is SOH; checksum is the sum of all bytes before 10=. */
        CHECK_EQ(tw_fix_checksum(g.p, gold[i].len - 7),
                 atoi(m.fields[m.count - 1].val));
        guard_free(&g);
    }
    /* The Wikipedia references must be the first two, with their sums. */
    CHECK(strstr(gold[0].p, "10=062") != NULL);
    CHECK(strstr(gold[1].p, "10=128") != NULL);
}

/* Every proper prefix of every golden message is incomplete, never garbled,
 * and never read past (each prefix sits against the guard page). */
static void test_truncations(void)
{
    static const unsigned flag_sets[] = { 0, TW_FIX_NO_CHECKSUM, TW_FIX_NO_BODYLEN };
    for (int i = 0; i < ngold; i++) {
        for (size_t n = 0; n < gold[i].len; n++) {
            guard g = guard_alloc(gold[i].p, n);
            for (size_t fs = 0; fs < TW_ARRAY_SIZE(flag_sets); fs++) {
                size_t skip = 0;
                int rc = tw_fix_frame(g.p, n, flag_sets[fs], &skip);
                if (rc != TW_FIX_INCOMPLETE)
                    fprintf(stderr, "golden %d prefix %zu flags %u: rc %d\n", i, n, flag_sets[fs], rc);
                CHECK_EQ(rc, TW_FIX_INCOMPLETE);
            }
            guard_free(&g);
        }
    }
}

/* A stream of all golden messages with junk between some of them, fed one
 * byte at a time: every message comes out once, in order, and the junk is
 * skipped.  Then the same stream in random-sized chunks. */
static void feed_stream(size_t (*next_chunk)(size_t), const char *what)
{
    static char stream[1 << 16], rx[1 << 16];
    size_t sl = 0;
    static const char *junk[] = { "\n", "garbage 8=FIY", "\r\n", "8=FIX.4.2\0019=1", "88=F" };
    size_t expect_off[GOLDEN_MAX];
    for (int i = 0; i < ngold; i++) {
        if (i % 3 == 1) {
            const char *j = junk[i % TW_ARRAY_SIZE(junk)];
            memcpy(stream + sl, j, strlen(j));
            sl += strlen(j);
        }
        expect_off[i] = sl;
        memcpy(stream + sl, gold[i].p, gold[i].len);
        sl += gold[i].len;
    }
    size_t fed = 0, head = 0, tail = 0; /* rx[head..tail) unconsumed */
    int got = 0;
    while (fed < sl || head < tail) {
        size_t c = next_chunk(sl - fed);
        memcpy(rx + tail, stream + fed, c);
        tail += c;
        fed += c;
        for (;;) {
            size_t skip = 0;
            int rc = tw_fix_frame(rx + head, tail - head, 0, &skip);
            if (rc > 0) {
                CHECK(got < ngold);
                if (got < ngold) {
                    CHECK_EQ(rc, gold[got].len);
                    CHECK(memcmp(rx + head, gold[got].p, gold[got].len) == 0);
                    CHECK_EQ(head, expect_off[got]);
                }
                got++;
                head += (size_t)rc;
            } else if (rc == TW_FIX_GARBLED) {
                CHECK(skip >= 1 && skip <= tail - head);
                head += skip;
            } else {
                break;
            }
        }
        if (fed == sl)
            break;
    }
    if (got != ngold)
        fprintf(stderr, "%s: framed %d of %d\n", what, got, ngold);
    CHECK_EQ(got, ngold);
    CHECK_EQ(head, tail);
}

static size_t one_byte(size_t left)
{
    return left ? 1 : 0;
}

static unsigned rng_state = 12345;
static unsigned rnd(void)
{
    rng_state = rng_state * 1103515245u + 12345u;
    return rng_state >> 8;
}

static size_t random_chunk(size_t left)
{
    size_t c = 1 + rnd() % 97;
    return c < left ? c : left;
}

/* A message with its checksum, body length, MsgType or BeginString broken
 * is garbled; the skip lands exactly on the next message, which frames. */
static void test_garbled_resync(void)
{
    char msg[512], stream[1024];
    size_t n = mkmsg(msg, sizeof(msg), "FIX.4.4", "35=D|49=A|56=B|34=7|11=X|55=Y|54=1|38=1|40=1|");
    struct {
        const char *what;
        size_t at; /* offset to corrupt */
        char to;
    } breaks[] = {
        { "checksum digit", 0, 0 },  /* filled below */
        { "body byte", 30, 'Z' },
        { "BeginString", 2, 'G' },
        { "BodyLength digit", 12, '9' },
        { "MsgType tag", 14, '4' },
        { "SOH in body", 20, '|' },
    };
    breaks[0].at = n - 2;
    breaks[0].to = msg[n - 2] == '9' ? '0' : (char)(msg[n - 2] + 1);
    for (size_t b = 0; b < TW_ARRAY_SIZE(breaks); b++) {
        memcpy(stream, msg, n);
        stream[breaks[b].at] = breaks[b].to;
        memcpy(stream + n, msg, n);
        size_t head = 0, skip;
        int rounds = 0, rc;
        tw_error err = { 0 };
        while ((rc = tw_fix_frame_ex(stream + head, 2 * n - head, 0, &skip, &err)) == TW_FIX_GARBLED &&
               rounds++ < 100)
            head += skip;
        if (rc != (int)n || head != n)
            fprintf(stderr, "resync after %s: rc %d head %zu (%s)\n", breaks[b].what, rc, head,
                    err.msg);
        CHECK_EQ(rc, n);
        CHECK_EQ(head, n);
    }
}

/* Random bytes and random corruptions of golden messages never crash, the
 * framer always makes progress, and a framed message always parses or is
 * rejected with an error (never read past the guard page). */
static void test_random_garbage(void)
{
    char buf[600];
    tw_fix_field f[64];
    for (int it = 0; it < 3000; it++) {
        const golden *src = &gold[rnd() % (unsigned)ngold];
        size_t n = src->len < sizeof(buf) ? src->len : sizeof(buf);
        memcpy(buf, src->p, n);
        int flips = (int)(rnd() % 4);
        for (int k = 0; k < flips; k++)
            buf[rnd() % n] = (char)(rnd() % 4 == 0 ? TW_FIX_SOH : rnd());
        if (it % 5 == 0)
            n = rnd() % n + 1;
        guard g = guard_alloc(buf, n);
        size_t skip = 0;
        int rc = tw_fix_frame(g.p, n, (unsigned)(it % 4), &skip);
        if (rc == TW_FIX_GARBLED)
            CHECK(skip >= 1 && skip <= n);
        else if (rc > 0) {
            CHECK((size_t)rc <= n);
            tw_fix_msg m = { .fields = f, .cap = 64 };
            int pr = tw_fix_parse(g.p, (size_t)rc, &m);
            CHECK(pr == 0 || pr == -EBADMSG || pr == -E2BIG);
        } else
            CHECK_EQ(rc, TW_FIX_INCOMPLETE);
        guard_free(&g);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s golden/messages.fix\n", argv[0]);
        return 2;
    }
    ngold = load_golden(argv[1], gold, GOLDEN_MAX);
    test_parse_table();
    test_frame_table();
    test_golden_frame_parse();
    test_truncations();
    feed_stream(one_byte, "byte by byte");
    feed_stream(random_chunk, "random chunks");
    test_garbled_resync();
    test_random_garbage();
    for (int i = 0; i < ngold; i++)
        free(gold[i].p);
    printf("fix parse: %d golden messages, SOH scan %s\n", ngold,
           tw_isa_name(tw_fix_isa_active()));
    return tw_check_done("fix parse");
}
