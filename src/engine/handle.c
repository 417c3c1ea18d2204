/* Request handling shared by every transport: datasets, INFO, the compute
 * pool, error frames.  Transports parse frames, call tw__handle() and send
 * what it put in the tw__reply. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "engine/engine_internal.h"
#include "tickwire/version.h"

typedef struct tw__dataset {
    uint64_t id;
    double *data;
    size_t n_bars;
    size_t bytes;
    int mapped; /* data is an mmap of a sealed memfd, not malloc'd */
    int refs;   /* the table's own reference counts as one */
} tw__dataset;

void *tw__aligned_alloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0)
        return NULL;
    return p;
}

static void put_u32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put_u64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

void tw__reply_error(tw_engine *e, tw__reply *r, uint16_t code, const char *fmt, ...)
{
    TW_VERIFY(code > 0 && code < TW_WERR_COUNT);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf((char *)r->small + 2, 400, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if (n > 399)
        n = 399;
    memcpy(r->small, &code, 2);
    r->small_len = 2 + (size_t)n;
    r->n_arr = 0;
    r->compute = 0;
    r->prefix = (uint32_t)r->small_len | TW_WIRE_ERROR_BIT;
    r->close_conn = code == TW_WERR_BAD_FRAME;
    atomic_fetch_add_explicit(&e->st.errors[code], 1, memory_order_relaxed);
    if (e->opts.verbose && e->opts.log) {
        char line[512];
        snprintf(line, sizeof(line), "tickwire serve: %s: %.*s", tw_wire_strerror(code), n,
                 (const char *)r->small + 2);
        e->opts.log(e->opts.log_ctx, line);
    }
}

static void reply_small(tw__reply *r, size_t len)
{
    r->small_len = len;
    r->n_arr = 0;
    r->compute = 0;
    r->close_conn = 0;
    r->prefix = (uint32_t)len;
}

/* ---- datasets ----------------------------------------------------------- */

static void dataset_free(tw__dataset *ds)
{
    if (ds->mapped)
        munmap(ds->data, ds->bytes);
    else
        free(ds->data);
    free(ds);
}

void tw__dataset_put(tw_engine *e, tw__dataset *ds)
{
    if (!ds)
        return;
    pthread_mutex_lock(&e->dslock);
    int last = --ds->refs == 0;
    pthread_mutex_unlock(&e->dslock);
    /* Freed here, on the request path: unmapping a dropped 1.2 MB dataset
     * costs ~35 us.  Handing it to a reaper thread was tried and measured
     * slower: its munmap contends with the next LOAD_FD's mmap and page
     * faults (mmap lock, TLB shootdowns), so LOAD_FD + DROP in a loop got
     * slower, not faster. */
    if (last)
        dataset_free(ds);
}

static tw__dataset *dataset_get(tw_engine *e, uint64_t id)
{
    tw__dataset *found = NULL;
    pthread_mutex_lock(&e->dslock);
    for (uint32_t i = 0; i < e->lim.max_datasets; i++)
        if (e->ds[i] && e->ds[i]->id == id) {
            found = e->ds[i];
            found->refs++;
            break;
        }
    pthread_mutex_unlock(&e->dslock);
    return found;
}

/* Reserves a slot and the bytes.  Returns 0, or -E2BIG (TOO_LARGE) or
 * -EBUSY (BUSY) with r filled with the error frame when the budget says
 * no. */
static int dataset_reserve(tw_engine *e, size_t bytes, tw__reply *r)
{
    if (bytes > e->lim.max_dataset_bytes) {
        tw__reply_error(e, r, TW_WERR_TOO_LARGE, "dataset of %zu bytes exceeds the limit of %llu",
                        bytes, (unsigned long long)e->lim.max_dataset_bytes);
        return -E2BIG;
    }
    pthread_mutex_lock(&e->dslock);
    int ok = e->ds_count < e->lim.max_datasets && e->ds_bytes + bytes <= e->lim.max_dataset_bytes;
    if (ok) {
        e->ds_count++;
        e->ds_bytes += bytes;
    }
    uint32_t cnt = e->ds_count;
    uint64_t held = e->ds_bytes;
    pthread_mutex_unlock(&e->dslock);
    if (!ok)
        tw__reply_error(e, r, TW_WERR_BUSY,
                        "dataset budget full: %u of %u datasets, %llu of %llu bytes held (DROP some)",
                        cnt, e->lim.max_datasets, (unsigned long long)held,
                        (unsigned long long)e->lim.max_dataset_bytes);
    return ok ? 0 : -EBUSY;
}

static void dataset_unreserve(tw_engine *e, size_t bytes)
{
    pthread_mutex_lock(&e->dslock);
    e->ds_count--;
    e->ds_bytes -= bytes;
    pthread_mutex_unlock(&e->dslock);
}

static uint64_t dataset_insert(tw_engine *e, tw__dataset *ds)
{
    pthread_mutex_lock(&e->dslock);
    ds->id = e->ds_next_id++;
    ds->refs = 1;
    uint32_t i = 0;
    while (i < e->lim.max_datasets && e->ds[i])
        i++;
    /* dataset_reserve() counted this one, so a slot is free. */
    TW_VERIFY(i < e->lim.max_datasets);
    e->ds[i] = ds;
    pthread_mutex_unlock(&e->dslock);
    return ds->id;
}

/* Forgets dataset id (its memory goes with the last reference).  Returns 0
 * or -ENOENT. */
static int dataset_drop(tw_engine *e, uint64_t id)
{
    tw__dataset *found = NULL;
    pthread_mutex_lock(&e->dslock);
    for (uint32_t i = 0; i < e->lim.max_datasets; i++)
        if (e->ds[i] && e->ds[i]->id == id) {
            found = e->ds[i];
            e->ds[i] = NULL;
            e->ds_count--;
            e->ds_bytes -= found->bytes;
            break;
        }
    pthread_mutex_unlock(&e->dslock);
    if (!found)
        return -ENOENT;
    tw__dataset_put(e, found);
    return 0;
}

static void reply_dataset_id(tw__reply *r, uint64_t id)
{
    put_u64(r->small, id);
    reply_small(r, 8);
}

static void do_load(tw_engine *e, const tw_wire_req *rq, tw__reply *r)
{
    const double *c = (const double *)(const void *)rq->close;
    size_t n = rq->n_bars;
    size_t bad = tw_first_bad_price(c, n);
    if (n == 0)
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS, "LOAD of an empty dataset");
    if (bad < n)
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "close[%zu] = %g: a price must be NaN or finite and > 0", bad, c[bad]);
    size_t bytes = n * 8;
    if (dataset_reserve(e, bytes, r))
        return;
    tw__dataset *ds = calloc(1, sizeof(*ds));
    double *d = tw__aligned_alloc(bytes);
    if (!ds || !d) {
        free(ds);
        free(d);
        dataset_unreserve(e, bytes);
        return tw__reply_error(e, r, TW_WERR_BUSY, "out of memory for a %zu-byte dataset", bytes);
    }
    memcpy(d, c, bytes);
    ds->data = d;
    ds->n_bars = n;
    ds->bytes = bytes;
    reply_dataset_id(r, dataset_insert(e, ds));
}

static void do_load_fd(tw_engine *e, int fd, tw__reply *r)
{
    if (fd < 0)
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "LOAD_FD without a file descriptor (send one memfd with SCM_RIGHTS "
                               "on a Unix socket)");
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS, "LOAD_FD: the descriptor is not a memfd "
                                                         "or regular file");
    if (st.st_size <= 0 || st.st_size % 8 != 0)
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "LOAD_FD: file of %lld bytes is not a non-empty f64 array",
                               (long long)st.st_size);
    if ((uint64_t)st.st_size / 8 > e->lim.max_bars)
        return tw__reply_error(e, r, TW_WERR_TOO_LARGE, "LOAD_FD: %lld bars exceed the limit of %u",
                               (long long)st.st_size / 8, e->lim.max_bars);
    size_t bytes = (size_t)st.st_size, n = bytes / 8;
    if (dataset_reserve(e, bytes, r))
        return;
    tw__dataset *ds = calloc(1, sizeof(*ds));
    if (!ds) {
        dataset_unreserve(e, bytes);
        return tw__reply_error(e, r, TW_WERR_BUSY, "out of memory");
    }
    /* Zero copy only when the sender can neither shrink the file under us
     * (that would turn our reads into SIGBUS) nor write to it (the prices
     * are validated once, below, and must stay valid).  F_SEAL_WRITE is
     * the seal that guarantees this: the kernel refuses it while any
     * writable mapping exists, whereas F_SEAL_FUTURE_WRITE leaves the
     * sender's existing mappings writable.  Anything else is copied with
     * pread, which fails cleanly if the file changes size. */
    int seals = fcntl(fd, F_GET_SEALS);
    double *d = NULL;
    if (seals >= 0 && (seals & F_SEAL_SHRINK) && (seals & F_SEAL_WRITE)) {
        /* Not MAP_POPULATE: measured on 1.2 MB, populating costs ~80 us
         * up front, while MADV_WILLNEED plus the fault-around of the
         * validation scan below (16 pages a fault) costs ~50 us. */
        void *m = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
        if (m != MAP_FAILED) {
            madvise(m, bytes, MADV_WILLNEED);
            d = m;
            ds->mapped = 1;
        }
    }
    if (!d) {
        d = tw__aligned_alloc(bytes);
        size_t got = 0;
        while (d && got < bytes) {
            ssize_t k = pread(fd, (char *)d + got, bytes - got, (off_t)got);
            if (k <= 0)
                break;
            got += (size_t)k;
        }
        if (!d || got < bytes) {
            free(d);
            free(ds);
            dataset_unreserve(e, bytes);
            return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                                   "LOAD_FD: could not read %zu bytes from the descriptor", bytes);
        }
    }
    ds->data = d;
    ds->n_bars = n;
    ds->bytes = bytes;
    size_t bad = tw_first_bad_price(d, n);
    if (bad < n) {
        double v = d[bad];
        dataset_free(ds);
        dataset_unreserve(e, bytes);
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "close[%zu] = %g: a price must be NaN or finite and > 0", bad, v);
    }
    reply_dataset_id(r, dataset_insert(e, ds));
}

/* ---- INFO --------------------------------------------------------------- */

/* s as a JSON string into buf (as snprintf: returns the length it needs). */
static size_t json_str(char *buf, size_t cap, const char *s)
{
    size_t o = 0;
#define PUT(ch)                                                                    \
    do {                                                                           \
        if (o + 1 < cap)                                                           \
            buf[o] = (ch);                                                         \
        o++;                                                                       \
    } while (0)
    PUT('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            PUT('\\');
            PUT((char)*p);
        } else if (*p < 0x20) {
            PUT('?');
        } else {
            PUT((char)*p);
        }
    }
    PUT('"');
    if (cap)
        buf[o < cap ? o : cap - 1] = 0;
#undef PUT
    return o;
}

/* ---- kernels ------------------------------------------------------------ */

int tw__engine_kernels(tw_engine *e, tw_error *err)
{
    if (e->opts.n_kernels > TW_ENGINE_MAX_KERNELS)
        return tw__err(err, -EINVAL, "at most %d preloaded kernels", TW_ENGINE_MAX_KERNELS);
    for (unsigned i = 0; i < e->opts.n_kernels; i++) {
        int rc = tw_kernel_find(e->opts.kernels[i], &e->kdefs[i], err);
        if (rc)
            return rc;
        e->n_kdefs = i + 1;
    }
    return 0;
}

/* The kernel a KSWEEP names (name[len], not NUL-terminated): a built-in,
 * or a preloaded kernel by the string it was loaded by or by its name. */
static const tw_kernel_def *kernel_named(tw_engine *e, const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < tw_kernel_builtin_count(); i++) {
        const tw_kernel_def *d = tw_kernel_builtin(i);
        if (strlen(d->name) == len && memcmp(d->name, name, len) == 0)
            return d;
    }
    for (unsigned i = 0; i < e->n_kdefs; i++) {
        const char *p = e->opts.kernels[i];
        if ((strlen(p) == len && memcmp(p, name, len) == 0) ||
            (strlen(e->kdefs[i]->name) == len && memcmp(e->kdefs[i]->name, name, len) == 0))
            return e->kdefs[i];
    }
    return NULL;
}

void tw__req_repoint(tw_wire_req *rq, const uint8_t *body)
{
    switch (rq->opcode) {
    case TW_OP_SWEEP:
    case TW_OP_ECHO:
    case TW_OP_LOAD:
        rq->close = body;
        rq->combos = body + 8u * rq->n_bars;
        break;
    case TW_OP_SWEEP_LOADED:
        rq->combos = body;
        break;
    case TW_OP_KSWEEP:
        rq->close = rq->n_bars ? body : NULL;
        rq->combos = body + 8u * rq->n_bars;
        break;
    default:
        break;
    }
}

static uint64_t ld(_Atomic uint64_t *a) { return atomic_load_explicit(a, memory_order_relaxed); }

int tw_engine_info_json(tw_engine *e, char *buf, size_t cap)
{
    static const char *opn[TW_OP_COUNT] = {"sweep", "echo", "load", "sweep_loaded",
                                           "drop", "info", "load_fd", "ksweep"};
    static const char *errn[TW_WERR_COUNT] = {"", "bad_frame", "too_large", "bad_params",
                                              "no_dataset", "busy", "internal"};
    pthread_mutex_lock(&e->dslock);
    uint32_t dsn = e->ds_count;
    uint64_t dsb = e->ds_bytes;
    pthread_mutex_unlock(&e->dslock);
    /* Set by tw_engine_create's probe sweeper; the stdio engine has none. */
    tw_isa isa = e->kernel_isa ? e->kernel_isa
                               : e->opts.sweep.isa == TW_ISA_AUTO ? tw_isa_best() : e->opts.sweep.isa;
    unsigned kthreads = e->kernel_threads ? e->kernel_threads : e->opts.sweep.threads;
    const tw_wire_limits *l = &e->lim;
    size_t o = 0;
#define J(...)                                                                     \
    do {                                                                           \
        int k_ = snprintf(buf + o, o < cap ? cap - o : 0, __VA_ARGS__);             \
        if (k_ < 0)                                                                \
            return -EINVAL;                                                        \
        o += (size_t)k_;                                                           \
    } while (0)
    /* sweep_cache_bytes: what each worker's sweeper may keep per bound
     * dataset (whole WMA passes for SWEEP_LOADED), opts.sweep.cache_bytes. */
    J("{\"version\":\"%s\",\"protocol\":1,\"kernel\":\"%s\",\"isa\":\"%s\",\"workers\":%u,"
      "\"threads\":%u,\"fee\":%.17g,\"block_bars\":%zu,\"sweep_cache_bytes\":%zu,",
      TW_VERSION_STRING, e->opts.sweep.kernel == TW_KERNEL_SCALAR ? "scalar" : "exact",
      tw_isa_name(isa), e->n_workers, kthreads, e->opts.sweep.fee, e->opts.sweep.block_bars,
      e->opts.sweep.cache_bytes);
    J("\"limits\":{\"max_frame_bytes\":%u,\"max_bars\":%u,\"max_combos\":%u,\"max_datasets\":%u,"
      "\"max_dataset_bytes\":%llu,\"max_conns\":%u,\"max_buffer_bytes\":%llu,\"shm_ring_max\":%u},",
      l->max_frame_bytes, l->max_bars, l->max_combos, l->max_datasets,
      (unsigned long long)l->max_dataset_bytes, l->max_conns,
      (unsigned long long)l->max_buffer_bytes, e->opts.shm_ring_max);
    J("\"datasets\":{\"count\":%u,\"bytes\":%llu},", dsn, (unsigned long long)dsb);
    /* Kernels KSWEEP may name: the built-ins, then the preloaded ones (with
     * the path they were loaded from). */
    J("\"kernels\":[");
    size_t nb = tw_kernel_builtin_count();
    for (size_t i = 0; i < nb + e->n_kdefs; i++) {
        const tw_kernel_def *d = i < nb ? tw_kernel_builtin(i) : e->kdefs[i - nb];
        J("%s{\"name\":\"%s\",\"source\":", i ? "," : "", d->name);
        if (i < nb)
            J("\"builtin\"");
        else
            o += json_str(buf + o, o < cap ? cap - o : 0, e->opts.kernels[i - nb]);
        J(",\"params\":[");
        for (uint32_t k = 0; k < d->n_params; k++)
            J("%s\"%s\"", k ? "," : "", d->params[k].name);
        J("]}");
    }
    J("],");
    J("\"counters\":{\"connections_accepted\":%llu,\"connections_open\":%llu,"
      "\"connections_refused\":%llu,\"shm_connections\":%llu,\"frames\":%llu,\"bytes_in\":%llu,"
      "\"bytes_out\":%llu,\"combos_swept\":%llu,\"buffer_bytes\":%llu,\"ops\":{",
      (unsigned long long)ld(&e->st.conns_accepted), (unsigned long long)ld(&e->st.conns_open),
      (unsigned long long)ld(&e->st.conns_refused), (unsigned long long)ld(&e->st.shm_conns),
      (unsigned long long)ld(&e->st.frames), (unsigned long long)ld(&e->st.bytes_in),
      (unsigned long long)ld(&e->st.bytes_out), (unsigned long long)ld(&e->st.combos),
      (unsigned long long)ld(&e->buf_bytes));
    for (int i = 0; i < TW_OP_COUNT; i++)
        J("%s\"%s\":%llu", i ? "," : "", opn[i], (unsigned long long)ld(&e->st.ops[i]));
    J("},\"errors\":{");
    for (int i = 1; i < TW_WERR_COUNT; i++)
        J("%s\"%s\":%llu", i > 1 ? "," : "", errn[i], (unsigned long long)ld(&e->st.errors[i]));
    J("}}}");
#undef J
    if (o >= cap)
        return -ENOSPC;
    return (int)o;
}

/* ---- dispatch ----------------------------------------------------------- */

/* A sweep job's data: the loaded dataset rq->dataset (a reference held
 * in job->ds) or the frame's closes; then a compute reply of
 * reply_per_combo bytes a combo, or the error frame. */
static void job_data(tw_engine *e, const tw_wire_req *rq, tw__reply *r, tw__job *job,
                     int loaded, uint32_t reply_per_combo)
{
    if (loaded) {
        job->ds = dataset_get(e, rq->dataset);
        if (!job->ds)
            return tw__reply_error(e, r, TW_WERR_NO_DATASET, "unknown dataset id %llu",
                                   (unsigned long long)rq->dataset);
        job->close = job->ds->data;
        job->n_bars = job->ds->n_bars;
    } else {
        job->close = (const double *)(const void *)rq->close;
        job->n_bars = rq->n_bars;
    }
    if (job->n_combos == 0 || job->n_bars == 0) {
        tw__dataset_put(e, job->ds);
        job->ds = NULL;
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS, "a sweep needs n_bars >= 1 and "
                                                         "n_combos >= 1 (got %zu and %zu)",
                               job->n_bars, job->n_combos);
    }
    reply_small(r, 0);
    r->compute = 1;
    r->prefix = reply_per_combo * rq->n_combos;
}

static void do_ksweep(tw_engine *e, const tw_wire_req *rq, tw__reply *r, tw__job *job)
{
    memset(job, 0, sizeof(*job));
    const uint8_t *name = rq->combos + 8u * (size_t)rq->n_combos * rq->n_params;
    const tw_kernel_def *def = kernel_named(e, name, rq->name_len);
    if (!def) {
        int shown = rq->name_len > 80 ? 80 : rq->name_len;
        for (int i = 0; i < shown; i++)
            if (name[i] < 0x20 || name[i] > 0x7e)
                shown = i;
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "KSWEEP: no kernel named \"%.*s\" here (built-ins and the "
                               "kernels this engine was started with: see INFO)", shown,
                               (const char *)name);
    }
    if (rq->n_params != def->n_params)
        return tw__reply_error(e, r, TW_WERR_BAD_PARAMS,
                               "KSWEEP: kernel %s takes %u params per combo, the frame carries %u",
                               def->name, def->n_params, rq->n_params);
    job->def = def;
    job->params = (const double *)(const void *)rq->combos;
    job->kflags = rq->flags;
    job->n_combos = rq->n_combos;
    job->fee = e->opts.sweep.fee;
    job->threads = e->kernel_threads ? e->kernel_threads : 1;
    job_data(e, rq, r, job, (rq->flags & TW_KSWEEP_LOADED) != 0,
             TW_KSWEEP_REPLY_BYTES(rq->flags));
}

void tw__handle(tw_engine *e, const tw_wire_req *rq, int fd, tw__reply *r, tw__job *job)
{
    atomic_fetch_add_explicit(&e->st.frames, 1, memory_order_relaxed);
    if (rq->opcode < TW_OP_COUNT)
        atomic_fetch_add_explicit(&e->st.ops[rq->opcode], 1, memory_order_relaxed);
    r->close_conn = 0;
    r->compute = 0;
    switch (rq->opcode) {
    case TW_OP_ECHO:
        /* The close array goes back verbatim, straight from where it was
         * received. */
        reply_small(r, 0);
        r->prefix = 8u * rq->n_bars;
        r->arr[0].iov_base = (void *)rq->close;
        r->arr[0].iov_len = 8u * rq->n_bars;
        r->n_arr = rq->n_bars ? 1 : 0;
        return;
    case TW_OP_SWEEP:
    case TW_OP_SWEEP_LOADED: {
        memset(job, 0, sizeof(*job));
        job->combos = (const int64_t *)(const void *)rq->combos;
        job->n_combos = rq->n_combos;
        return job_data(e, rq, r, job, rq->opcode == TW_OP_SWEEP_LOADED, 16u);
    }
    case TW_OP_KSWEEP:
        return do_ksweep(e, rq, r, job);
    case TW_OP_LOAD:
        return do_load(e, rq, r);
    case TW_OP_DROP:
        if (dataset_drop(e, rq->dataset))
            return tw__reply_error(e, r, TW_WERR_NO_DATASET, "DROP of unknown dataset id %llu",
                                   (unsigned long long)rq->dataset);
        return reply_small(r, 0);
    case TW_OP_INFO: {
        int n = tw_engine_info_json(e, (char *)r->small + 4, sizeof(r->small) - 4);
        if (n < 0)
            return tw__reply_error(e, r, TW_WERR_INTERNAL, "INFO JSON does not fit its buffer");
        put_u32(r->small, (uint32_t)n);
        return reply_small(r, 4 + (size_t)n);
    }
    case TW_OP_LOAD_FD:
        return do_load_fd(e, fd, r);
    default:
        return tw__reply_error(e, r, TW_WERR_BAD_FRAME, "opcode %u not allowed here", rq->opcode);
    }
}

void tw__finish_compute(tw_engine *e, tw__job *job, tw__reply *r)
{
    tw__dataset_put(e, job->ds);
    job->ds = NULL;
    if (job->rc == 0) {
        atomic_fetch_add_explicit(&e->st.combos, job->n_combos, memory_order_relaxed);
        return;
    }
    int rc = job->rc;
    if (rc == -TW_EBADWINDOW || rc == -TW_EBADPRICE || rc == -TW_ENODATA ||
        (job->def && rc == -EINVAL))
        tw__reply_error(e, r, TW_WERR_BAD_PARAMS, "%s", job->err.msg);
    else if (rc == -ENOMEM || rc == -E2BIG)
        tw__reply_error(e, r, TW_WERR_BUSY, "sweep could not get memory: %s", job->err.msg);
    else
        tw__reply_error(e, r, TW_WERR_INTERNAL, "sweep failed (%d): %s", rc, job->err.msg);
}

/* ---- compute pool ------------------------------------------------------- */

void tw__submit(tw_engine *e, tw__job *job)
{
    job->next = NULL;
    pthread_mutex_lock(&e->qlock);
    if (e->qtail)
        e->qtail->next = job;
    else
        e->qhead = job;
    e->qtail = job;
    pthread_cond_signal(&e->qcond);
    pthread_mutex_unlock(&e->qlock);
}

/* SWEEP_LOADED binds its dataset to the sweeper, so that the sweeper's
 * WMA window cache (at most opts.sweep.cache_bytes per worker, INFO's
 * sweep_cache_bytes) carries over from call to call (a chatty client's one
 * combo per call then costs that combo's passes only).  The tag is the
 * dataset id: ids come from a counter that never goes back, so a DROP and
 * a new LOAD (even of memory at the same address) get a new tag and a
 * fresh cache.  The bound pointer may dangle once the job's reference is
 * released; the kernel reads it only inside bind/run_bound, and those run
 * only with a reference held. */
/* A KSWEEP: hma_sar without statistics through the sweeper (its bound
 * dataset's cache included), with the same checks as any kernel's combos;
 * anything else through tw_ksweep.  The reply columns follow pnl and
 * trades in the job's output. */
static int ksweep_run(tw_sweeper *sw, tw__job *j)
{
    const tw_kernel_def *d = j->def;
    size_t n = j->n_combos, np = d->n_params;
    if (!(j->kflags & TW_KSWEEP_STATS) && strcmp(d->name, "hma_sar") == 0 &&
        np == TW_COMBO_WINDOWS) {
        for (size_t c = 0; c < n; c++)
            for (size_t k = 0; k < np; k++) {
                double v = j->params[c * np + k];
                const tw_kparam *p = &d->params[k];
                if (!(v >= p->lo && v <= p->hi) || (p->integer && v != floor(v)))
                    return tw__err(&j->err, -EINVAL, "combo %zu: kernel %s: param %s = %g %s",
                                   c, d->name, p->name, v,
                                   v >= p->lo && v <= p->hi ? "is not an integer"
                                                            : "is outside its bounds");
            }
        int64_t *w = malloc(n * np * sizeof(int64_t));
        if (!w)
            return tw__err(&j->err, -ENOMEM, "no memory for %zu combos", n);
        for (size_t i = 0; i < n * np; i++)
            w[i] = (int64_t)j->params[i];
        int rc;
        if (!j->ds) {
            rc = tw_sweeper_run(sw, j->close, j->n_bars, w, n, j->pnl, j->trades, &j->err);
        } else {
            rc = tw_sweeper_bind(sw, j->close, j->n_bars, j->ds->id, &j->err);
            if (rc == 0)
                rc = tw_sweeper_run_bound(sw, w, n, j->pnl, j->trades, &j->err);
        }
        free(w);
        return rc;
    }
    tw_kresult *res = malloc(n * sizeof(*res));
    if (!res)
        return tw__err(&j->err, -ENOMEM, "no memory for %zu results", n);
    tw_ksweep_opts o;
    tw_ksweep_opts_init(&o);
    o.fee = j->fee;
    o.threads = j->threads;
    int rc = tw_ksweep(d, j->close, j->n_bars, j->params, n, &o, res, NULL, NULL, &j->err);
    if (rc == 0) {
        int64_t *wins = j->trades + n;
        double *mdd = (double *)(void *)(wins + n), *expo = mdd + n;
        int64_t *fpos = (int64_t *)(void *)(expo + n);
        int stats = (j->kflags & TW_KSWEEP_STATS) != 0;
        for (size_t c = 0; c < n; c++) {
            j->pnl[c] = res[c].pnl;
            j->trades[c] = res[c].trades;
            if (stats) {
                wins[c] = res[c].wins;
                mdd[c] = res[c].max_drawdown;
                expo[c] = res[c].exposure;
                fpos[c] = res[c].open.side;
            }
        }
    }
    free(res);
    return rc;
}

int tw__job_run(tw_sweeper *sw, tw__job *j)
{
    if (j->def)
        return ksweep_run(sw, j);
    if (!j->ds)
        return tw_sweeper_run(sw, j->close, j->n_bars, j->combos, j->n_combos, j->pnl,
                              j->trades, &j->err);
    int rc = tw_sweeper_bind(sw, j->close, j->n_bars, j->ds->id, &j->err);
    if (rc == 0)
        rc = tw_sweeper_run_bound(sw, j->combos, j->n_combos, j->pnl, j->trades, &j->err);
    return rc;
}

/* Each worker owns one sweeper, sized at start and regrown only for a
 * request whose n_bars has already passed the max_bars limit. */
void *tw__worker_main(void *arg);
void *tw__worker_main(void *arg)
{
    tw_engine *e = arg;
    tw_sweeper *sw = NULL;
    size_t cap = 0;
    if (tw_sweeper_create(&sw, e->opts.sweeper_bars, &e->opts.sweep) == 0)
        cap = e->opts.sweeper_bars;
    for (;;) {
        pthread_mutex_lock(&e->qlock);
        while (!e->qhead && !e->qstop)
            pthread_cond_wait(&e->qcond, &e->qlock);
        tw__job *j = e->qhead;
        if (!j) {
            pthread_mutex_unlock(&e->qlock);
            break;
        }
        e->qhead = j->next;
        if (!e->qhead)
            e->qtail = NULL;
        pthread_mutex_unlock(&e->qlock);

        if (!sw || j->n_bars > cap) {
            tw_sweeper_destroy(sw);
            sw = NULL;
            cap = 0;
            size_t want = j->n_bars > e->opts.sweeper_bars ? j->n_bars : e->opts.sweeper_bars;
            if (tw_sweeper_create(&sw, want, &e->opts.sweep) == 0)
                cap = want;
        }
        if (!sw)
            j->rc = tw__err(&j->err, -ENOMEM, "no memory for a sweeper of %zu bars", j->n_bars);
        else
            j->rc = tw__job_run(sw, j);
        j->done(j);
    }
    tw_sweeper_destroy(sw);
    return NULL;
}
