#define _POSIX_C_SOURCE 200809L /* strdup */
/* libFuzzer target: the pull reader on arbitrary bytes, fed exactly the ranges it asks for or
 * windows around them (chunk size and flags come from the input), must report exactly what
 * el_inspect reports on the whole buffer (formats 1.0 and 2.0 alike); every answer is a fresh
 * allocation of its size, so a read outside it is an ASan error. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* window 0: exactly the ranges asked; else windows of that many bytes (el_reader_feed_window). */
static char *pulled(const uint8_t *data, size_t size, int flags, double chunk, size_t window) {
  el_reader *r = el_reader_new((double)size, flags, chunk);
  if (!r) return NULL;
  for (int k; (k = el_reader_next(r)) != EL_NEED_DONE;) {
    size_t off = (size_t)el_reader_offset(r), len = (size_t)el_reader_length(r);
    if (!len || off > size || len > size - off) __builtin_trap(); /* asks outside the file */
    if (k == EL_NEED_CRC32 && (!window || len > window)) {
      el_reader_feed_crc32(r, el_crc32(0, data + off, len));
      continue;
    }
    size_t give = window > len ? window : len;
    if (give > size - off) give = size - off;
    uint8_t *copy = malloc(give);
    if (!copy) break;
    memcpy(copy, data + off, give);
    int rc = window ? el_reader_feed_window(r, (double)off, copy, give) : el_reader_feed(r, copy, len);
    if (rc) __builtin_trap();
    free(copy);
  }
  el_result *res = el_reader_result(r);
  char *j = res ? strdup(el_result_json(res)) : NULL;
  el_result_free(res);
  el_reader_free(r);
  return j;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int flags[] = {0, EL_INSPECT_VALIDATE, EL_INSPECT_HEADERS_ONLY};
  int f = flags[size ? data[size - 1] % 3 : 0];
  double chunk = 64 + (size > 1 ? data[size - 2] % 200 : 0);
  el_result *whole = el_inspect(data, size, f);
  if (!whole) return 0;
  for (int way = 0; way < 3; way++) { /* exact ranges; the same with core CRCs; windows */
    char *j = pulled(data, size, f | (way == 1 ? EL_READ_CORE_CRC : 0), chunk,
                     way == 2 ? (size_t)chunk + 37 : 0);
    if (j && strcmp(j, el_result_json(whole))) __builtin_trap(); /* differs from whole */
    free(j);
  }
  el_result_free(whole);
  return 0;
}
