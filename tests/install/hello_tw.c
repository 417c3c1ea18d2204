/* Built against an installed tickwire through pkg-config: finds the first
 * bad price of a tiny series (exercises a real library call). */
#include <math.h>   /* NAN */
#include <stdio.h>

#include <tickwire/kernel.h>
#include <tickwire/kernel_abi.h>
#include <tickwire/version.h>

int main(void)
{
    const double close[4] = {100.0, NAN, -1.0, 102.0}; /* a NaN is a gap, -1 is bad */
    size_t bad = tw_first_bad_price(close, 4);
    printf("tickwire %s first bad price at %zu\n", TW_VERSION_STRING, bad);
    return bad == 2 ? 0 : 1;
}
