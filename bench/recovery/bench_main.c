/* Standalone form of `tickwire bench recovery` (bench_recovery.c). */
int tw__cli_bench_recovery(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__cli_bench_recovery(argc, argv);
}
