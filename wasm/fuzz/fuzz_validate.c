/* libFuzzer target: the pickle stream validator on arbitrary bytes. The report must always
 * be produced (or NULL only for out-of-memory) and be NUL-terminated; sanitizers do the rest. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elastic_lite.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  el_result *r = el_validate_pickle(data, size);
  if (r) {
    const char *j = el_result_json(r);
    if (strlen(j) != el_result_json_len(r) || j[0] != '{') __builtin_trap();
    el_result_free(r);
  }
  return 0;
}
