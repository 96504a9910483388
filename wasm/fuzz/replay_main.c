/* Runs a fuzz target's entry point once over every file of a corpus directory (a quick
 * regression check under ctest, with any compiler; no fuzzing). Usage: replay_x DIR... */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
  size_t got = b && n > 0 ? fread(b, 1, (size_t)n, f) : 0;
  fclose(f);
  LLVMFuzzerTestOneInput(b, got);
  free(b);
  return 1;
}

static int run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st)) continue;
    count += S_ISDIR(st.st_mode) ? run_dir(path) : run_file(path);
  }
  closedir(d);
  return count;
}

int main(int argc, char **argv) {
  int count = 0;
  for (int i = 1; i < argc; i++) count += run_dir(argv[i]);
  fprintf(stderr, "replayed %d inputs\n", count);
  return count > 0 ? 0 : 1;
}
