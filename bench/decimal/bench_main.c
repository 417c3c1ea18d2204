/* Standalone form of `tickwire bench decimal` (bench_decimal.c). */
int tw__cli_bench_decimal(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__cli_bench_decimal(argc, argv);
}
