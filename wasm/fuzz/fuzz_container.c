/* libFuzzer target: the container reader (with pickle validation of every record) on
 * arbitrary bytes, and the same bytes written by the writer (as one record's stream plus
 * out-of-band buffers cut from them), which must always read back intact. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void inspect_all_ways(const uint8_t *data, size_t size) {
  static const int flags[] = {0, EL_INSPECT_VALIDATE, EL_INSPECT_HEADERS_ONLY};
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    el_result *r = el_inspect(data, size, flags[i]);
    if (r) {
      const char *j = el_result_json(r);
      if (strlen(j) != el_result_json_len(r) || j[0] != '{') __builtin_trap();
      el_result_free(r);
    }
  }
}

/* Writes the input as a checkpoint: stream = the input, buffers = up to 3 slices of it. */
static void write_and_read_back(const uint8_t *data, size_t size) {
  el_writer *w = el_writer_new("fuzz", "3", 0);
  if (!w) return;
  size_t split = size ? data[0] % (size + 1) : 0;
  size_t nbuf = size > 1 ? data[1] % 4 : 0;
  int ok = el_writer_begin_record(w, EL_KIND_DATA, data, split < 64 ? split : 64) == 0 &&
           el_writer_append(w, data, size) == 0;
  for (size_t i = 0; ok && i < nbuf; i++)
    ok = el_writer_add_buffer(w, (double)(size / (i + 1)), el_crc32(0, data, size / (i + 1))) >= 0;
  ok = ok && el_writer_end_record(w, EL_SER_PICKLE, 0, EL_END_COMPUTE_CRC) == 0 &&
       el_writer_finish(w) == 0;
  uint8_t *file = NULL;
  size_t len = 0;
  for (const el_part *p = el_writer_take(w); ok && p->kind != EL_PART_NONE; p = el_writer_take(w)) {
    uint8_t *grown = realloc(file, len + (size_t)p->length + 1);
    if (!grown) break;
    file = grown;
    const uint8_t *src = p->kind == EL_PART_BYTES ? (const uint8_t *)(uintptr_t)p->data : data;
    if (p->length) memcpy(file + len, src, (size_t)p->length);
    len += (size_t)p->length;
  }
  if (ok && file) {
    el_result *r = el_inspect(file, len, 0);
    if (r && !el_result_ok(r)) __builtin_trap(); /* our own output must always read back */
    el_result_free(r);
  }
  free(file);
  el_writer_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  inspect_all_ways(data, size);
  write_and_read_back(data, size);
  return 0;
}
