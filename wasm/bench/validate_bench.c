/* Native side of benchmarks/validate.mjs: validates one stream repeatedly and prints the
 * best time per pass. Usage: el_validate_bench FILE [min_seconds]
 * Output (one JSON line): {"bytes":N,"runs":R,"best_s":S,"mb_per_s":M,"ok":true} */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "elastic_lite.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s FILE [min_seconds]\n", argv[0]);
    return 2;
  }
  double min_s = argc > 2 ? atof(argv[2]) : 1.0;
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (!b || (n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n)) {
    fprintf(stderr, "cannot read %s\n", argv[1]);
    return 2;
  }
  fclose(f);
  double best = 1e30, start = now();
  int runs = 0, ok = 1;
  do {
    double t0 = now();
    el_result *r = el_validate_pickle(b, (size_t)n);
    double dt = now() - t0;
    ok = r && el_result_ok(r);
    el_result_free(r);
    if (dt < best) best = dt;
    runs++;
  } while (now() - start < min_s || runs < 3);
  printf("{\"bytes\":%ld,\"runs\":%d,\"best_s\":%.9f,\"mb_per_s\":%.1f,\"ok\":%s}\n", n, runs,
         best, (double)n / best / 1e6, ok ? "true" : "false");
  free(b);
  return ok ? 0 : 1;
}
