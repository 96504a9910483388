/* Rewindable sink: appends, nested marks, rewind without copy, commit, limits, reserve. */
#include <stdint.h>

#include "check.h"

static void many_small_appends(void) {
  el_sink *s = el_sink_new();
  CHECK(s);
  for (uint32_t i = 0; i < 500000; i++) {
    uint8_t b[4] = {(uint8_t)i, (uint8_t)(i >> 8), (uint8_t)(i >> 16), 0};
    if (el_sink_append(s, b, 3)) {
      CHECK(0);
      break;
    }
  }
  CHECK(el_sink_size(s) == 1500000);
  const uint8_t *d = el_sink_data(s);
  CHECK(d[3 * 123456] == (uint8_t)123456 && d[3 * 123456 + 1] == (uint8_t)(123456 >> 8));
  el_sink_free(s);
}

static void large_writes(void) {
  el_sink *s = el_sink_new();
  size_t big = (size_t)24 << 20;
  uint8_t *src = malloc(big);
  for (size_t i = 0; i < big; i++) src[i] = (uint8_t)(i * 7);
  for (int k = 0; k < 4; k++) CHECK(el_sink_append(s, src, big) == 0);
  CHECK(el_sink_size(s) == 4 * big);
  CHECK(memcmp(el_sink_data(s) + 3 * big, src, big) == 0);
  free(src);
  el_sink_free(s);
}

static void marks(void) {
  el_sink *s = el_sink_new();
  CHECK(el_sink_append(s, (const uint8_t *)"head", 4) == 0);
  int m0 = el_sink_mark(s);
  CHECK(m0 == 0);
  CHECK(el_sink_append(s, (const uint8_t *)"AAAA", 4) == 0);
  int m1 = el_sink_mark(s);
  CHECK(m1 == 1 && el_sink_depth(s) == 2);
  CHECK(el_sink_append(s, (const uint8_t *)"BBBB", 4) == 0);
  const uint8_t *before = el_sink_data(s);
  CHECK(el_sink_rewind(s, m1) == 0); /* drops BBBB, no copy: buffer stays put */
  CHECK(el_sink_data(s) == before);
  CHECK(el_sink_size(s) == 8 && el_sink_depth(s) == 1);
  CHECK(el_sink_rewind(s, m1) == EL_EINVAL); /* closed mark */
  CHECK_CONTAINS(el_sink_error(s), "mark 1 is not open");
  CHECK(el_sink_append(s, (const uint8_t *)"CC", 2) == 0);
  CHECK(el_sink_commit(s, m0) == 0);
  CHECK(el_sink_depth(s) == 0 && el_sink_size(s) == 10);
  CHECK(memcmp(el_sink_data(s), "headAAAACC", 10) == 0);
  /* rewinding an outer mark closes the inner ones too */
  int a = el_sink_mark(s);
  CHECK(el_sink_append(s, (const uint8_t *)"x", 1) == 0);
  int b = el_sink_mark(s);
  CHECK(el_sink_append(s, (const uint8_t *)"y", 1) == 0);
  (void)b;
  CHECK(el_sink_rewind(s, a) == 0 && el_sink_depth(s) == 0 && el_sink_size(s) == 10);
  CHECK(el_sink_commit(s, 0) == EL_EINVAL && el_sink_rewind(s, -1) == EL_EINVAL);
  /* deep nesting */
  for (int i = 0; i < 100000; i++) CHECK(el_sink_mark(s) == i);
  CHECK(el_sink_rewind(s, 0) == 0 && el_sink_depth(s) == 0);
  el_sink_free(s);
}

static void reserve(void) {
  el_sink *s = el_sink_new();
  uint8_t *p = el_sink_reserve(s, 5);
  CHECK(p);
  memcpy(p, "hello", 5);
  CHECK(el_sink_size(s) == 5 && memcmp(el_sink_data(s), "hello", 5) == 0);
  p = el_sink_reserve(s, 0);
  CHECK(p && el_sink_size(s) == 5);
  el_sink_free(s);
}

static void allocation_failure(void) {
  el_sink *s = el_sink_new();
  CHECK(el_sink_set_limit(s, 1000) == 0);
  CHECK(el_sink_append(s, (const uint8_t *)"abc", 3) == 0);
  uint8_t buf[2000] = {0};
  CHECK(el_sink_append(s, buf, 998) == EL_ENOMEM);
  CHECK_CONTAINS(el_sink_error(s), "sink limit reached");
  CHECK(el_sink_size(s) == 3); /* unchanged */
  CHECK(el_sink_append(s, buf, 997) == 0 && el_sink_size(s) == 1000);
  CHECK(el_sink_set_limit(s, 0) == 0);
  /* a request no allocator can satisfy: an error, not a crash (ASan is told to return NULL) */
  CHECK(el_sink_reserve(s, SIZE_MAX / 2 - 10) == NULL);
  CHECK(el_sink_reserve(s, SIZE_MAX / 4) == NULL);
  CHECK(el_sink_error(s)[0] != 0);
  CHECK(el_sink_size(s) == 1000);
  CHECK(el_sink_append(NULL, buf, 1) == EL_EINVAL);
  CHECK(el_sink_append(s, NULL, 1) == EL_EINVAL);
  el_sink_free(s);
  el_sink_free(NULL);
}

int main(void) {
  many_small_appends();
  large_writes();
  marks();
  reserve();
  allocation_failure();
  CHECK_DONE();
}
