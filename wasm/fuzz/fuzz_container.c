/* libFuzzer target: the container reader (with pickle validation of every record) on
 * arbitrary bytes, and the same bytes fed to the writer as one record's payload. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  for (int flags = 0; flags < 3; flags += 1) {
    el_result *r = el_inspect(data, size, flags == 2 ? EL_INSPECT_HEADERS_ONLY : flags);
    if (r) {
      const char *j = el_result_json(r);
      if (strlen(j) != el_result_json_len(r) || j[0] != '{') __builtin_trap();
      el_result_free(r);
    }
  }
  /* writing the bytes as a record and reading the container back finds that record intact */
  el_writer *w = el_writer_new("fuzz", "3", 0);
  if (!w) return 0;
  size_t split = size ? data[0] % (size + 1) : 0;
  if (el_writer_begin_record(w, data, split < 64 ? split : 64) == 0 &&
      el_writer_append(w, data, size) == 0 && el_writer_end_record(w, 1) == 0 &&
      el_writer_finish(w) == 0) {
    el_result *r = el_inspect(el_writer_data(w), el_writer_size(w), 0);
    if (r && !el_result_ok(r)) __builtin_trap(); /* our own output must always read back */
    el_result_free(r);
  }
  el_writer_free(w);
  return 0;
}
