/* bench_engine: the same benchmark as `tickwire bench engine`. */
int tw__bench_engine(int argc, char **argv);

int main(int argc, char **argv) { return tw__bench_engine(argc, argv); }
