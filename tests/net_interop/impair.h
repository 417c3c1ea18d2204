/* An impairing port: wraps a real port and applies, in this process and on
 * both directions, what `tc netem` would (loss, duplication, corruption,
 * delay with jitter, reordering) plus a rate-limited bottleneck queue that
 * marks ECT packets CE above a queueing delay (what RED or fq_codel with
 * `ecn` would do).  The interop tests use tc netem / fq_codel when the
 * kernel has them; this kernel (CONFIG_NET_SCH_NETEM, _FQ_CODEL and _RED
 * all unset) does not, so the same impairments are applied here instead:
 * the kernel peer still sees lost, duplicated, reordered, corrupted and
 * CE-marked segments from us, and we see the same on its segments.
 * Test code: it reads the clock and uses a seeded PRNG. */
#ifndef TW_TESTS_IMPAIR_H
#define TW_TESTS_IMPAIR_H

#include "tickwire/port.h"

typedef struct twi_config {
    double loss, dup, reorder, corrupt; /* probabilities per packet, each direction */
    uint64_t delay_ns, jitter_ns;       /* one-way delay and +- jitter */
    /* Bottleneck on the way out (stack -> peer): 0 = none. */
    uint64_t rate_Bps;
    uint64_t mark_ns; /* CE-mark ECT packets queued longer than this */
    uint64_t drop_ns; /* drop packets that would queue longer than this */
    uint64_t seed;
} twi_config;

typedef struct twi_stats {
    uint64_t lost, duped, reordered, corrupted, delayed, ce_marked, queue_drops;
} twi_stats;

/* Wraps inner (not owned: close it after the wrapper).  Returns 0 or
 * -ENOMEM. */
int twi_wrap(tw_port **out, tw_port *inner);
/* Changes the impairments (all zero = pass-through). */
void twi_set(tw_port *w, const twi_config *cfg);
const twi_stats *twi_get_stats(const tw_port *w);

#endif
