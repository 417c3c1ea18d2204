/* What the attach tests share: the events the test gateway journals, a
 * small deterministic strategy core (the shape of tw_strategy: events in,
 * intents out, a pure function of the event sequence) and the intents it
 * writes, children started with posix_spawn of this program. */
#ifndef TW_TESTS_ATTACH_UTIL_H
#define TW_TESTS_ATTACH_UTIL_H

#include <spawn.h>
#include <string.h>
#include <sys/types.h>

#include "journal/journal_test_util.h"
#include "tickwire/shm_attach.h"

extern char **environ;

#define AT_KIND_STOP TW_JOURNAL_KIND_APP /* the last event: the strategy exits */

/* An inbound event (a journal record's payload). */
typedef struct at_ev {
    uint64_t idx;   /* 1.. */
    uint64_t value; /* ju_mix(idx) */
    uint64_t check; /* ju_mix(idx ^ value) */
    uint64_t pad[5];
} at_ev;

/* An intent (an outbound slot, and the payload the gateway journals as OUT). */
typedef struct at_out {
    uint64_t idx;   /* the event it was decided on */
    uint64_t h;     /* the core's state after that event */
    uint64_t core;  /* the ring it goes to: idx % n_cores */
    uint64_t check; /* ju_mix(idx * 31 + h) */
    uint64_t pad[4];
} at_out;
_Static_assert(sizeof(at_ev) == TW_JOURNAL_PAYLOAD && sizeof(at_out) == TW_ATTACH_OUT_SLOT,
               "test records are one payload");

static inline void at_ev_make(at_ev *e, uint64_t idx)
{
    memset(e, 0, sizeof(*e));
    e->idx = idx;
    e->value = ju_mix(idx);
    e->check = ju_mix(idx ^ e->value);
}

static inline int at_ev_ok(const at_ev *e)
{
    return e->value == ju_mix(e->idx) && e->check == ju_mix(e->idx ^ e->value);
}

static inline int at_out_ok(const at_out *o, uint32_t n_cores)
{
    return o->check == ju_mix(o->idx * 31 + o->h) && o->core == o->idx % n_cores;
}

/* The strategy core: h folds in every event's value in order; every event
 * that leaves h divisible by 3 decides an intent. */
typedef struct at_core {
    uint64_t h;
} at_core;

/* Steps c over e; returns 1 with *o the intent, or 0. */
static inline int at_core_step(at_core *c, const at_ev *e, uint32_t n_cores, at_out *o)
{
    c->h = ju_mix(c->h ^ e->value);
    if (c->h % 3 != 0)
        return 0;
    memset(o, 0, sizeof(*o));
    o->idx = e->idx;
    o->h = c->h;
    o->core = e->idx % n_cores;
    o->check = ju_mix(o->idx * 31 + o->h);
    return 1;
}

/* Starts this program with args (args[0] is its name).  Returns the pid or -1. */
static inline pid_t at_spawn(char **args)
{
    pid_t pid;
    return posix_spawn(&pid, "/proc/self/exe", NULL, NULL, args, environ) == 0 ? pid : -1;
}

#endif
