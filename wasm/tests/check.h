/* Minimal test harness: CHECK keeps going and counts failures; main returns non-zero. */
#ifndef EL_CHECK_H
#define EL_CHECK_H
#include <stdint.h>
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
/* A growable byte string for assembling a checkpoint from the writer's parts. */
typedef struct {
  unsigned char *data;
  size_t len;
} blob;

static inline void blob_put(blob *b, const void *p, size_t n) {
  b->data = realloc(b->data, b->len + n + 1);
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
}

/* Where a part's bytes come from when they are not in the core: out-of-band buffer
 * (record, buffer) or a stored record (record, buffer ignored). */
typedef const unsigned char *(*part_source)(void *ctx, const el_part *part);

/* Takes every part the writer has ready and appends its bytes to out, in file order.
 * Checks that parts are contiguous: each starts where the previous one ended. */
static inline int drain(el_writer *w, blob *out, part_source src, void *ctx) {
  int parts = 0;
  for (const el_part *p = el_writer_take(w); p->kind != EL_PART_NONE; p = el_writer_take(w)) {
    if (p->offset != out->len) {
      fprintf(stderr, "part at offset %llu, expected %zu\n", (unsigned long long)p->offset, out->len);
      return -1;
    }
    if (p->kind == EL_PART_BYTES)
      blob_put(out, (const void *)(uintptr_t)p->data, (size_t)p->length);
    else
      blob_put(out, src(ctx, p), (size_t)p->length);
    parts++;
  }
  return parts;
}

#endif
