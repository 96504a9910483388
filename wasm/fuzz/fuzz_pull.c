#define _POSIX_C_SOURCE 200809L /* strdup */
/* libFuzzer target: the pull reader on arbitrary bytes, fed in windows whose size and flags
 * come from the input, must report exactly what el_inspect reports on the whole buffer
 * (formats 1.0 and 2.0 alike); every answer is a fresh allocation of the asked size. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *pulled(const uint8_t *data, size_t size, int flags, double chunk) {
  el_reader *r = el_reader_new((double)size, flags, chunk);
  if (!r) return NULL;
  for (int k; (k = el_reader_next(r)) != EL_NEED_DONE;) {
    size_t off = (size_t)el_reader_offset(r), len = (size_t)el_reader_length(r);
    if (!len || off > size || len > size - off) __builtin_trap(); /* asks outside the file */
    if (k == EL_NEED_CRC32) {
      el_reader_feed_crc32(r, el_crc32(0, data + off, len));
      continue;
    }
    uint8_t *copy = malloc(len);
    if (!copy) break;
    memcpy(copy, data + off, len);
    if (el_reader_feed(r, copy, len)) __builtin_trap();
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
  for (int core_crc = 0; core_crc < 2; core_crc++) {
    char *j = pulled(data, size, f | (core_crc ? EL_READ_CORE_CRC : 0), chunk);
    if (j && strcmp(j, el_result_json(whole))) __builtin_trap(); /* differs from whole */
    free(j);
  }
  el_result_free(whole);
  return 0;
}
