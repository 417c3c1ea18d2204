/* bench_ring: `tickwire bench ring` as a program of its own. */
int tw__cli_bench_ring(int argc, char **argv);

int main(int argc, char **argv) { return tw__cli_bench_ring(argc, argv); }
