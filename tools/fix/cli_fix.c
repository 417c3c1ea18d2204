/* `tickwire fix decode` and `tickwire fix check`: FIX logs and messages for
 * humans.  Built on the same framer, parser and accessors as the engine,
 * so what these tools accept is exactly what the session accepts. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tickwire/decimal.h"
#include "tickwire/fix.h"

#define MAX_INPUT (256u << 20)
#define MAX_FIELDS 4096

typedef struct opts {
    int pipe;        /* '|' stands for SOH */
    int json;        /* decode: one JSON object per message */
    unsigned flags;  /* TW_FIX_NO_CHECKSUM ... */
    const char *src; /* file, "-" or a literal message */
} opts;

/* Reads all of f into a malloc'd buffer (*len bytes).  NULL on error. */
static char *slurp(FILE *f, size_t *len)
{
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    while (b) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            if (cap >= MAX_INPUT) {
                fprintf(stderr, "tickwire fix: input larger than %u MiB\n", MAX_INPUT >> 20);
                free(b);
                return NULL;
            }
            char *nb = realloc(b, cap * 2);
            if (!nb)
                free(b);
            b = nb;
            cap *= 2;
        }
    }
    if (b && ferror(f)) {
        free(b);
        return NULL;
    }
    *len = n;
    return b;
}

static char *load(const opts *o, size_t *len)
{
    char *b;
    if (!strncmp(o->src, "8=", 2)) { /* a message on the command line */
        *len = strlen(o->src);
        b = malloc(*len + 1);
        if (b)
            memcpy(b, o->src, *len + 1);
    } else if (!strcmp(o->src, "-")) {
        b = slurp(stdin, len);
    } else {
        FILE *f = fopen(o->src, "rb");
        if (!f) {
            fprintf(stderr, "tickwire fix: cannot open %s: %s\n", o->src, strerror(errno));
            return NULL;
        }
        b = slurp(f, len);
        fclose(f);
    }
    if (!b) {
        fprintf(stderr, "tickwire fix: cannot read %s\n", o->src);
        return NULL;
    }
    /* A literal without any SOH but with '|' means '|' for SOH. */
    int pipe = o->pipe || (!strncmp(o->src, "8=", 2) && !memchr(b, TW_FIX_SOH, *len));
    if (pipe)
        for (size_t i = 0; i < *len; i++)
            if (b[i] == '|')
                b[i] = TW_FIX_SOH;
    return b;
}

static const char decode_usage[] =
    "usage: tickwire fix decode [-p|--pipe] [--json] [--no-checksum] [--no-bodylength] [FILE|-]\n"
    "  Prints every FIX message of a log (messages may be separated by newlines)\n"
    "  with tag names and value meanings.  -p: '|' stands for SOH.  --json: one\n"
    "  JSON object per line and message, {\"index\", \"msg_type\", \"name\",\n"
    "  \"bytes\", \"fields\": [{\"tag\", \"name\", \"value\"}, ...]}, with the values\n"
    "  of price fields (LastPx, AvgPx, Price, MDEntryPx, ...) as the float64 they\n"
    "  parse to, in the shortest text that reads back as the same float64, and\n"
    "  every other value as a string.  Bytes that are not a message are\n"
    "  reported on stderr and skipped; exit 1 if any.\n";

static int parse_opts(int argc, char **argv, opts *o, const char *usage)
{
    memset(o, 0, sizeof(*o));
    o->src = "-";
    int have_src = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(usage, stdout);
            return 1;
        } else if (!strcmp(a, "-p") || !strcmp(a, "--pipe")) {
            o->pipe = 1;
        } else if (!strcmp(a, "--no-checksum")) {
            o->flags |= TW_FIX_NO_CHECKSUM;
        } else if (!strcmp(a, "--no-bodylength")) {
            o->flags |= TW_FIX_NO_BODYLEN;
        } else if (!strcmp(a, "--json") && usage == decode_usage) {
            o->json = 1;
        } else if (a[0] == '-' && a[1] != 0) {
            fprintf(stderr, "tickwire fix: unknown option %s\n%s", a, usage);
            return -1;
        } else if (!have_src) {
            o->src = a;
            have_src = 1;
        } else {
            fprintf(stderr, "tickwire fix: one input only\n%s", usage);
            return -1;
        }
    }
    return 0;
}

/* The options and the input of decode and check: the loaded input, or NULL
 * with *code the exit status (0 after --help, 2 on a usage error, 1 when
 * the input cannot be read). */
static char *open_input(int argc, char **argv, const char *usage, opts *o, size_t *len,
                        int *code)
{
    int r = parse_opts(argc, argv, o, usage);
    if (r) {
        *code = r > 0 ? 0 : 2;
        return NULL;
    }
    *code = 1;
    return load(o, len);
}

static int is_space_run(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != '\n' && p[i] != '\r' && p[i] != ' ' && p[i] != '\t')
            return 0;
    return 1;
}

/* What a walk over a log reports.  Each callback gets the byte offset of
 * what it reports; msg gets a message that framed, garbled bytes that are
 * not a message (err says why; they are skipped), truncated the offset
 * where the input ends inside a message (the walk stops there). */
typedef struct walker {
    void (*msg)(void *ctx, size_t off, const char *p, size_t n);
    void (*garbled)(void *ctx, size_t off, size_t n, const tw_error *err);
    void (*truncated)(void *ctx, size_t off);
    void *ctx;
} walker;

/* What decode and check keep while walking a log: the input, the framer
 * flags, messages seen and problems found. */
typedef struct log_state {
    const char *buf;
    size_t len;
    unsigned flags;
    int json;
    long n, bad;
} log_state;

/* The one walk over a log that decode and check share.  Whitespace
 * between messages (newline-separated logs) is skipped silently. */
static void walk(const char *buf, size_t len, unsigned flags, const walker *w)
{
    size_t off = 0;
    while (off < len) {
        size_t skip = 0;
        tw_error err = { 0 };
        int rc = tw_fix_frame_ex(buf + off, len - off, flags, &skip, &err);
        if (rc == TW_FIX_INCOMPLETE) {
            if (!is_space_run(buf + off, len - off))
                w->truncated(w->ctx, off);
            return;
        }
        if (rc == TW_FIX_GARBLED) {
            if (!is_space_run(buf + off, skip))
                w->garbled(w->ctx, off, skip, &err);
            off += skip;
            continue;
        }
        w->msg(w->ctx, off, buf + off, (size_t)rc);
        off += (size_t)rc;
    }
}

static void print_value(FILE *out, const char *v, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c >= 0x20 && c < 0x7f)
            fputc(c, out);
        else
            fprintf(out, "\\x%02x", c);
    }
}

static void print_message(FILE *out, long idx, const char *msg, size_t len, const tw_fix_msg *m)
{
    tw_fix_header h;
    int hok = tw_fix_read_header(m, &h, NULL) == 0;
    const char *tn = tw_fix_msg_type_name(m->msg_type, m->msg_type_len);
    fprintf(out, "#%ld %s (%.*s)", idx, tn ? tn : "unknown MsgType", (int)m->msg_type_len,
            m->msg_type);
    if (hok)
        fprintf(out, "  %.*s  seq %lld  %.*s -> %.*s", (int)h.begin_string.len,
                h.begin_string.p, (long long)h.msg_seq_num, (int)h.sender_comp_id.len,
                h.sender_comp_id.p, (int)h.target_comp_id.len, h.target_comp_id.p);
    fprintf(out, "  %zu bytes, %u fields\n", len, m->count);
    for (uint32_t i = 0; i < m->count; i++) {
        const tw_fix_field *f = &m->fields[i];
        const char *name = tw_fix_tag_name(f->tag);
        fprintf(out, "  %5u %-24s = ", f->tag, name ? name : "?");
        print_value(out, f->val, f->len);
        const char *en = tw_fix_enum_name(f->tag, f->val, f->len);
        if (en)
            fprintf(out, " (%s)", en);
        fputc('\n', out);
    }
}


/* A JSON string of v[0..n): quotes, backslashes and control bytes
 * escaped, bytes above 0x7F as the Latin-1 code points they would be (a
 * FIX value is bytes, not UTF-8). */
static void json_str(FILE *out, const char *v, size_t n)
{
    fputc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)v[i];
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c >= 0x7F)
            fprintf(out, "\\u%04x", c);
        else
            fputc(c, out);
    }
    fputc('"', out);
}

/* One message as one line of JSON. */
static void json_message(FILE *out, long idx, size_t len, const tw_fix_msg *m)
{
    const char *tn = tw_fix_msg_type_name(m->msg_type, m->msg_type_len);
    fprintf(out, "{\"index\":%ld,\"msg_type\":", idx);
    json_str(out, m->msg_type, m->msg_type_len);
    fputs(",\"name\":", out);
    if (tn)
        json_str(out, tn, strlen(tn));
    else
        fputs("null", out);
    fprintf(out, ",\"bytes\":%zu,\"fields\":[", len);
    for (uint32_t i = 0; i < m->count; i++) {
        const tw_fix_field *f = &m->fields[i];
        const char *name = tw_fix_tag_name(f->tag);
        fprintf(out, "%s{\"tag\":%u,\"name\":", i ? "," : "", f->tag);
        if (name)
            json_str(out, name, strlen(name));
        else
            fputs("null", out);
        fputs(",\"value\":", out);
        double x;
        char t[TW_DECIMAL_MAX];
        /* A price as the float64 the trader trades on (live.md, "Prices
         * are exact"); one that is not a finite decimal stays a string. */
        if (tw_fix_tag_is_price(f->tag) && tw_decimal_to_double(f->val, f->len, &x) == 0 &&
            x - x == 0) {
            tw_double_to_decimal(x, t);
            fputs(t, out);
        } else {
            json_str(out, f->val, f->len);
        }
        fputc('}', out);
    }
    fputs("]}\n", out);
}

static void decode_msg(void *ctx, size_t off, const char *p, size_t n)
{
    log_state *d = ctx;
    static tw_fix_field fields[MAX_FIELDS];
    tw_fix_msg m = { .fields = fields, .cap = MAX_FIELDS };
    tw_error err;
    if (tw_fix_parse_ex(p, n, &m, &err) != 0) {
        fprintf(stderr, "tickwire fix decode: byte %zu: message does not parse: %s\n", off, err.msg);
        d->bad++;
        return;
    }
    if (d->json)
        json_message(stdout, ++d->n, n, &m);
    else
        print_message(stdout, ++d->n, p, n, &m);
}

static void decode_garbled(void *ctx, size_t off, size_t n, const tw_error *err)
{
    log_state *d = ctx;
    fprintf(stderr, "tickwire fix decode: byte %zu: skipped %zu bytes: %s\n", off, n, err->msg);
    d->bad++;
}

static void decode_truncated(void *ctx, size_t off)
{
    log_state *d = ctx;
    fprintf(stderr, "tickwire fix decode: byte %zu: the input ends inside a message\n", off);
    d->bad++;
}

int tw__cli_fix_decode(int argc, char **argv);
int tw__cli_fix_decode(int argc, char **argv)
{
    opts o;
    size_t len;
    int code;
    char *buf = open_input(argc, argv, decode_usage, &o, &len, &code);
    if (!buf)
        return code;
    log_state d = { buf, len, o.flags, o.json, 0, 0 };
    walker w = { decode_msg, decode_garbled, decode_truncated, &d };
    walk(buf, len, o.flags, &w);
    free(buf);
    if (d.bad)
        fprintf(stderr, "tickwire fix decode: %ld messages, %ld problems\n", d.n, d.bad);
    return d.bad ? 1 : 0;
}

/* Runs the typed accessor for m's MsgType; 0 if none is known for it. */
static int check_typed(const tw_fix_msg *m, tw_error *err)
{
    union {
        tw_fix_logon a;
        tw_fix_heartbeat b;
        tw_fix_test_request c;
        tw_fix_resend_request d;
        tw_fix_reject e;
        tw_fix_sequence_reset f;
        tw_fix_logout g;
        tw_fix_exec_report er;
        tw_fix_cancel_reject cj;
        tw_fix_new_order no;
        tw_fix_cancel_request cq;
        tw_fix_md_request mr;
    } u;
    static tw_fix_md_entry ent[1024];
    tw_fix_md md;
    if (m->msg_type_len != 1)
        return 0;
    switch (m->msg_type[0]) {
    case 'A': return tw_fix_read_logon(m, &u.a, err);
    case '0': return tw_fix_read_heartbeat(m, &u.b, err);
    case '1': return tw_fix_read_test_request(m, &u.c, err);
    case '2': return tw_fix_read_resend_request(m, &u.d, err);
    case '3': return tw_fix_read_reject(m, &u.e, err);
    case '4': return tw_fix_read_sequence_reset(m, &u.f, err);
    case '5': return tw_fix_read_logout(m, &u.g, err);
    case '8': return tw_fix_read_exec_report(m, 18, &u.er, err);
    case '9': return tw_fix_read_cancel_reject(m, &u.cj, err);
    case 'D': return tw_fix_read_new_order(m, 18, &u.no, err);
    case 'F': return tw_fix_read_cancel_request(m, &u.cq, err);
    case 'V': return tw_fix_read_md_request(m, &u.mr, err);
    case 'W': return tw_fix_read_md_snapshot(m, 18, &md, ent, 1024, err);
    case 'X': return tw_fix_read_md_incremental(m, 18, &md, ent, 1024, err);
    default: return 0;
    }
}

/* Says what a garbled frame would need to be right: the BodyLength that
 * would reach CheckSum(10), and the sum the bytes actually have. */
static void explain_frame(const char *p, size_t n, unsigned flags, const char *already)
{
    size_t skip;
    /* Frame once more on the CheckSum(10) field alone, which finds where
     * the message really ends whatever BodyLength says. */
    int rc = tw_fix_frame(p, n, TW_FIX_NO_BODYLEN | TW_FIX_NO_CHECKSUM, &skip);
    if (rc <= 0)
        return;
    const char *s1 = memchr(p, TW_FIX_SOH, (size_t)rc);
    const char *s2 = s1 ? memchr(s1 + 1, TW_FIX_SOH, (size_t)rc - (size_t)(s1 + 1 - p)) : NULL;
    if (!s2)
        return;
    size_t body_len = (size_t)rc - 7 - (size_t)(s2 + 1 - p);
    unsigned long said = strtoul(s1 + 3, NULL, 10);
    if (said != body_len) {
        /* The sum changes with the BodyLength digits: no hint for it yet. */
        printf("  hint: BodyLength(9) says %lu; the body up to CheckSum(10) is %zu bytes\n", said,
               body_len);
        return;
    }
    if (!(flags & TW_FIX_NO_CHECKSUM) && strncmp(already, "CheckSum", 8) != 0) {
        char want[8];
        snprintf(want, sizeof(want), "%03u", tw_fix_checksum(p, (size_t)rc - 7));
        if (memcmp(p + rc - 4, want, 3) != 0)
            printf("  hint: the bytes before CheckSum(10) sum to %s (mod 256)\n", want);
    }
}

static const char check_usage[] =
    "usage: tickwire fix check [-p|--pipe] [--no-checksum] [--no-bodylength] [FILE|-|'8=FIX...']\n"
    "  Validates each message: framing, BeginString, BodyLength, CheckSum, field\n"
    "  syntax, the standard header, and the required fields and values of the\n"
    "  message types tickwire reads.  Says exactly what is wrong; exit 1 if\n"
    "  anything is.  A message given on the command line may use '|' for SOH.\n";

static void check_msg(void *ctx, size_t off, const char *p, size_t n)
{
    log_state *c = ctx;
    static tw_fix_field fields[MAX_FIELDS];
    tw_fix_msg m = { .fields = fields, .cap = MAX_FIELDS };
    tw_fix_header h;
    tw_error err;
    const char *what = NULL;
    c->n++;
    if (tw_fix_parse_ex(p, n, &m, &err) != 0)
        what = "field syntax";
    else if (tw_fix_read_header(&m, &h, &err) != 0)
        what = "standard header";
    else if (check_typed(&m, &err) != 0)
        what = "message body";
    if (what) {
        printf("message %ld (byte %zu): error in %s: %s\n", c->n, off, what, err.msg);
        c->bad++;
        return;
    }
    const char *tn = tw_fix_msg_type_name(m.msg_type, m.msg_type_len);
    int typed = m.msg_type_len == 1 && m.msg_type[0] != 0 &&
                strchr("A01234589DFVWX", m.msg_type[0]) != NULL;
    printf("message %ld (byte %zu): OK  %s (%.*s), %.*s seq %lld, %u fields%s\n", c->n, off,
           tn ? tn : "unknown MsgType", (int)m.msg_type_len, m.msg_type,
           (int)h.begin_string.len, h.begin_string.p, (long long)h.msg_seq_num, m.count,
           typed ? "" : " (body not checked: no accessor for this MsgType)");
}

static void check_garbled(void *ctx, size_t off, size_t n, const tw_error *err)
{
    log_state *c = ctx;
    printf("byte %zu: error: %s (%zu bytes skipped)\n", off, err->msg, n);
    explain_frame(c->buf + off, c->len - off, c->flags, err->msg);
    c->bad++;
}

static void check_truncated(void *ctx, size_t off)
{
    log_state *c = ctx;
    printf("byte %zu: error: incomplete message (%zu bytes): it ends before its "
           "BodyLength(9) and CheckSum(10) say it should\n", off, c->len - off);
    explain_frame(c->buf + off, c->len - off, c->flags, "");
    c->bad++;
}

int tw__cli_fix_check(int argc, char **argv);
int tw__cli_fix_check(int argc, char **argv)
{
    opts o;
    size_t len;
    int code;
    char *buf = open_input(argc, argv, check_usage, &o, &len, &code);
    if (!buf)
        return code;
    log_state c = { buf, len, o.flags, 0, 0, 0 };
    walker w = { check_msg, check_garbled, check_truncated, &c };
    walk(buf, len, o.flags, &w);
    free(buf);
    if (c.n == 0 && c.bad == 0) {
        printf("error: no FIX message in the input\n");
        return 1;
    }
    return c.bad ? 1 : 0;
}
