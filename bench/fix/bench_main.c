/* Standalone form of `tickwire bench fix` (bench_fix.c). */
int tw__cli_bench_fix(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__cli_bench_fix(argc, argv);
}
