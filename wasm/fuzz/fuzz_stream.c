/* libFuzzer target: the resumable pickle validator fed in windows (the window size comes
 * from the input's first byte) must report exactly what el_validate_pickle reports on the
 * whole stream; every window is a fresh allocation of its size. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!size) return 0;
  size_t window = 1 + data[0] % 32;
  data++, size--;
  el_result *whole = el_validate_pickle(data, size);
  el_validator *v = el_validator_new((double)size);
  if (!whole || !v) {
    el_result_free(whole);
    el_validator_free(v);
    return 0;
  }
  size_t at = 0, want = window, feeds = 0;
  for (;;) {
    size_t give = want > window ? want : window;
    if (at > size) __builtin_trap();
    if (give > size - at) give = size - at;
    uint8_t *copy = malloc(give ? give : 1);
    if (!copy) break;
    memcpy(copy, data + at, give);
    int done = el_validator_feed(v, (double)at, copy, give);
    free(copy);
    if (done) break;
    at = (size_t)el_validator_need_offset(v);
    want = (size_t)el_validator_need_length(v);
    if (++feeds > 4 * size + 16) __builtin_trap(); /* asks forever */
  }
  el_result *part = el_validator_result(v);
  if (part && strcmp(el_result_json(part), el_result_json(whole))) __builtin_trap();
  el_result_free(part);
  el_result_free(whole);
  el_validator_free(v);
  return 0;
}
