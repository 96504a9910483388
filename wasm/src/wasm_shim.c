/* WebAssembly only. Emscripten's standalone heap calls emscripten_notify_memory_growth after
 * memory.grow so a JS embedder can refresh its views; it is an import unless defined here.
 * Our callers re-create views after every call anyway (see elastic_lite.h), so a no-op
 * definition keeps the module free of imports. */
#ifdef __EMSCRIPTEN__
#include <stddef.h>

void emscripten_notify_memory_growth(size_t memory_index);
void emscripten_notify_memory_growth(size_t memory_index) { (void)memory_index; }
#else
typedef int el_wasm_shim_unused; /* ISO C forbids an empty translation unit */
#endif
