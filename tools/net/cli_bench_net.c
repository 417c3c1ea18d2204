/* `tickwire bench net`: the stack's parse and sim-segment benchmarks
 * (bench/net/bench_net_core.c).  The veth round-trip benchmark is
 * `tickwire bench netrtt`. */
int tw__bench_net_run(int argc, char **argv);
int tw__cli_bench_net(int argc, char **argv);

int tw__cli_bench_net(int argc, char **argv)
{
    return tw__bench_net_run(argc, argv);
}
