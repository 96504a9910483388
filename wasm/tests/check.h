/* Minimal test harness: CHECK keeps going and counts failures; main returns non-zero. */
#ifndef EL_CHECK_H
#define EL_CHECK_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_lite.h"

static int check_failures;
#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      check_failures++;                                                      \
    }                                                                        \
  } while (0)
#define CHECK_CONTAINS(hay, needle)                                                   \
  do {                                                                                \
    const char *h_ = (hay);                                                           \
    if (!h_ || !strstr(h_, (needle))) {                                               \
      fprintf(stderr, "%s:%d: expected to find \"%s\" in:\n  %s\n", __FILE__, __LINE__, \
              (needle), h_ ? h_ : "(null)");                                          \
      check_failures++;                                                               \
    }                                                                                 \
  } while (0)
#define CHECK_DONE()                                                   \
  do {                                                                 \
    if (check_failures) fprintf(stderr, "%d check(s) failed\n", check_failures); \
    return check_failures ? 1 : 0;                                     \
  } while (0)

/* Reads a whole file; NULL if missing. */
static inline unsigned char *read_file(const char *path, size_t *len) {
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
  if (b && n > 0 && fread(b, 1, (size_t)n, f) != (size_t)n) {
    free(b);
    b = NULL;
  }
  fclose(f);
  *len = n > 0 ? (size_t)n : 0;
  return b;
}
#endif
