/* bench_net: the stack's parse and sim-segment benchmarks (the same code
 * as `tickwire bench net`). */
int tw__bench_net_run(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__bench_net_run(argc, argv);
}
