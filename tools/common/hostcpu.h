/* What the host took of this machine's CPUs while a benchmark ran: the
 * steal time of /proc/stat (a virtual CPU ready to run while the
 * hypervisor ran something else).  On a shared VM a run that lost a
 * quarter of its CPU time to the host measures the host, not the code;
 * the benchmarks print it beside their figures. */
#ifndef TW_TOOLS_HOSTCPU_H
#define TW_TOOLS_HOSTCPU_H

#include <stdint.h>

typedef struct tw__cpu_times {
    uint64_t steal; /* clock ticks, all CPUs */
    uint64_t total; /* user .. steal, all CPUs */
    int ok;         /* 0: /proc/stat unreadable or without a steal field */
} tw__cpu_times;

/* Reads the aggregate "cpu" line of /proc/stat. */
void tw__cpu_times_read(tw__cpu_times *t);

/* Steal between a and b in percent of all CPU time then; NAN when either
 * reading failed or no time passed. */
double tw__steal_pct(const tw__cpu_times *a, const tw__cpu_times *b);

#endif
