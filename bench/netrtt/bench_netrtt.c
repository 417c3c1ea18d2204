/* Standalone entry of the veth round-trip benchmark (tools/netrtt). */
int tw__cli_bench_netrtt(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__cli_bench_netrtt(argc, argv);
}
