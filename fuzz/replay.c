/* Corpus replay: runs LLVMFuzzerTestOneInput over every file in the
 * directories (or files) given, so that CI replays each fuzz corpus under
 * the sanitizer build without needing libFuzzer itself. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    /* An exact-size heap copy so ASan catches any read past the input. */
    uint8_t *buf = malloc(len > 0 ? (size_t)len : 1);
    if (!buf || (len > 0 && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
        fclose(f);
        free(buf);
        fprintf(stderr, "replay: cannot read %s\n", path);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)len);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    long files = 0;
    for (int a = 1; a < argc; a++) {
        struct stat st;
        if (stat(argv[a], &st) != 0) {
            fprintf(stderr, "replay: no such corpus %s\n", argv[a]);
            return 1;
        }
        if (!S_ISDIR(st.st_mode)) {
            if (run_file(argv[a]) != 0)
                return 1;
            files++;
            continue;
        }
        DIR *d = opendir(argv[a]);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char p[4096];
            snprintf(p, sizeof(p), "%s/%s", argv[a], e->d_name);
            if (run_file(p) != 0)
                return 1;
            files++;
        }
        if (d)
            closedir(d);
    }
    if (files == 0) {
        fprintf(stderr, "replay: empty corpus\n");
        return 1;
    }
    printf("replay: %ld inputs, no crash\n", files);
    return 0;
}
