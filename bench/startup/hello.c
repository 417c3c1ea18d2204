/* The yardstick of `tickwire bench startup`: a C hello-world. */
#include <stdio.h>

int main(void)
{
    puts("hello");
    return 0;
}
