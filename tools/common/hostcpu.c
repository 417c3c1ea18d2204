/* Host steal time from /proc/stat (hostcpu.h). */
#include "common/hostcpu.h"

#include <math.h>
#include <stdio.h>

void tw__cpu_times_read(tw__cpu_times *t)
{
    t->steal = t->total = 0;
    t->ok = 0;
    FILE *f = fopen("/proc/stat", "r");
    if (!f)
        return;
    unsigned long long v[8];
    /* cpu user nice system idle iowait irq softirq steal [guest ...] */
    if (fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
               &v[4], &v[5], &v[6], &v[7]) == 8) {
        for (int i = 0; i < 8; i++)
            t->total += v[i];
        t->steal = v[7];
        t->ok = 1;
    }
    fclose(f);
}

double tw__steal_pct(const tw__cpu_times *a, const tw__cpu_times *b)
{
    if (!a->ok || !b->ok || b->total <= a->total || b->steal < a->steal)
        return NAN;
    return 100.0 * (double)(b->steal - a->steal) / (double)(b->total - a->total);
}
