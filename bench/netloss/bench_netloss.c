/* Standalone entry of the impaired-link benchmark (bench_netloss_core.c;
 * also `tickwire bench netloss`). */
int tw__bench_netloss_run(int argc, char **argv);

int main(int argc, char **argv)
{
    return tw__bench_netloss_run(argc, argv);
}
