/* Native side of benchmarks/checksum.mjs: CRC throughput of each slicing width on one
 * buffer, best of repeated passes. Usage: el_checksum_bench MIB [min_seconds]
 * Output (one JSON line): {"bytes":N,"crc32_w1":MBps,...,"crc32c_w16":MBps} */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef uint32_t (*crc_fn)(int width, uint32_t crc, const uint8_t *p, size_t n);

/* Best MB/s over passes lasting at least min_s in total (3 passes minimum). */
static double best_mbps(crc_fn fn, int width, const uint8_t *b, size_t n, double min_s,
                        uint32_t *out) {
  double best = 1e30, start = now();
  int runs = 0;
  do {
    double t0 = now();
    *out = fn(width, 0, b, n);
    double dt = now() - t0;
    if (dt < best) best = dt;
    runs++;
  } while (now() - start < min_s || runs < 3);
  return (double)n / best / 1e6;
}

int main(int argc, char **argv) {
  size_t mib = argc > 1 ? (size_t)atol(argv[1]) : 64;
  double min_s = argc > 2 ? atof(argv[2]) : 1.0;
  size_t n = mib << 20;
  uint8_t *b = malloc(n);
  if (!b) return 2;
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    b[i] = (uint8_t)x;
  }
  uint32_t c1, c8, c16, c5, k8, k16;
  double w1 = best_mbps(el_crc32_width, 1, b, n, min_s, &c1);
  double w8 = best_mbps(el_crc32_width, 8, b, n, min_s, &c8);
  double w16 = best_mbps(el_crc32_width, 16, b, n, min_s, &c16);
  double w5 = best_mbps(el_crc32_width, 5, b, n, min_s, &c5);
  double kc8 = best_mbps(el_crc32c_width, 8, b, n, min_s, &k8);
  double kc16 = best_mbps(el_crc32c_width, 16, b, n, min_s, &k16);
  printf("{\"bytes\":%zu,\"crc32\":%u,\"agree\":%s,\"crc32_w1\":%.1f,\"crc32_w8\":%.1f,"
         "\"crc32_w16\":%.1f,\"crc32_w5\":%.1f,\"crc32c_w8\":%.1f,\"crc32c_w16\":%.1f}\n",
         n, c16, c1 == c8 && c8 == c16 && c16 == c5 && k8 == k16 ? "true" : "false", w1, w8, w16,
         w5, kc8, kc16);
  free(b);
  return 0;
}
