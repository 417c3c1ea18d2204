/* Standalone entry of the veth round-trip benchmark (bench_netrtt_core.c;
 * also `tickwire bench netrtt`). */
int tw__bench_netrtt_run(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__bench_netrtt_run(argc, argv);
}
