/* Standalone form of `tickwire bench journal` (bench_journal.c). */
int tw__cli_bench_journal(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__cli_bench_journal(argc, argv);
}
