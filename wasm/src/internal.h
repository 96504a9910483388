/* Private helpers shared by the parts of the core. Nothing here is exported. */
#ifndef EL_INTERNAL_H
#define EL_INTERNAL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "elastic_lite.h"

#define EL_ERRMSG 320 /* room for one error message */

/* Formats into dst (always NUL-terminated, truncated to cap). A tiny printf so the
 * WebAssembly build pulls in no stdio (and therefore imports nothing). Conversions:
 *   %s const char*   %u uint64_t   %d int64_t   %x uint32_t (8 hex digits)   %% */
void el_fmt(char *dst, size_t cap, const char *fmt, ...);
void el_vfmt(char *dst, size_t cap, const char *fmt, va_list ap);

/* Grows *arr (an array of elem-sized items, capacity *cap) by doubling until it holds at
 * least `need` items. 0 if out of memory or the size would overflow (*arr unchanged). */
int el_grow(void **arr, size_t *cap, size_t need, size_t elem);

/* Sets the library-wide message read by el_last_error. */
void el_set_last_error(const char *fmt, ...);

/* Growable text buffer for building JSON. After an allocation failure it stays failed and
 * ignores further writes; the caller checks .failed once at the end. */
typedef struct {
  char *data;
  size_t len, cap;
  int failed;
} el_buf;
void el_buf_put(el_buf *b, const void *p, size_t n);
void el_buf_puts(el_buf *b, const char *s);
void el_buf_u64(el_buf *b, uint64_t v);
void el_buf_i64(el_buf *b, int64_t v);
void el_buf_hex32(el_buf *b, uint32_t v);
/* Appends s as a JSON string literal. Valid UTF-8 is copied; surrogate code points encoded
 * in 3 bytes (what Python's "surrogatepass" produces) become \uXXXX escapes; any other
 * invalid byte becomes U+FFFD, so the output is valid JSON whatever the input. */
void el_buf_json_str(el_buf *b, const uint8_t *s, size_t n);
void el_buf_json_cstr(el_buf *b, const char *s);
void el_buf_free(el_buf *b);

/* Length of the well-formed UTF-8 prefix of s (== n when all of s is valid). With
 * allow_surrogates, U+D800..U+DFFF encoded as 3 bytes are accepted (Python surrogatepass). */
size_t el_utf8_valid_prefix(const uint8_t *s, size_t n, int allow_surrogates);
/* Appends code point cp as (generalized) UTF-8 to b. */
void el_buf_codepoint(el_buf *b, uint32_t cp);

/* Little-endian loads and stores (the container and pickle are little-endian). */
static inline uint16_t el_ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t el_ld32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t el_ld64(const uint8_t *p) {
  return (uint64_t)el_ld32(p) | ((uint64_t)el_ld32(p + 4) << 32);
}
static inline void el_st16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}
static inline void el_st32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void el_st64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- pickle validator (pickle_*.c) used by el_validate_pickle and the reader ---- */
/* One import a stream makes: module.name (string ids) by opcode under a protocol. */
typedef struct {
  size_t module, name;
  unsigned opcode; /* OP_GLOBAL, OP_INST, OP_STACK_GLOBAL, OP_EXT1/2/4 */
  int proto;       /* protocol in force: the last PROTO before it (0 if none) */
  int64_t ext;     /* EXT1/2/4: the extension code (module.name is then a placeholder) */
  unsigned calls;  /* EL_CALL_* bits: opcodes that call the imported object directly */
} el_import;
#define EL_CALL_REDUCE 1u
#define EL_CALL_NEWOBJ 2u
#define EL_CALL_NEWOBJ_EX 4u
#define EL_CALL_OBJ 8u  /* the class of an OBJ */
#define EL_CALL_INST 16u /* INST imports and instantiates in one opcode */

typedef struct {
  int ok;
  char message[EL_ERRMSG];
  uint64_t offset;    /* offset of the failing opcode in the stream */
  const char *opcode; /* its pickletools name, or NULL (unknown opcode / no opcode) */
  int protocol;       /* highest PROTO seen, 0 if none */
  int nomem;          /* ran out of memory (message says so) */
  uint64_t buffers_used; /* NEXT_BUFFER opcodes: out-of-band buffers the stream loads */
  /* Strings are interned: each distinct string once in arena, string i at
   * arena.data[soff[i]] with length slen[i]. Global i (deduplicated, first-seen order) is the
   * pair of string ids gpair[2i] (module), gpair[2i+1] (name); imports lists every distinct
   * (module, name, opcode, protocol, ext) in first-seen order. */
  el_buf arena;
  size_t *soff, *slen;
  size_t nstrings, scap;
  size_t *gpair;
  size_t nglobals, gcap;
  el_import *imports;
  size_t nimports, icap;
} el_pickle_report;

/* The resumable validator: feed it the stream's bytes in windows (any sizes, in the order it
 * asks); it walks the opcodes as far as each window allows and says which bytes it needs
 * next. Large opaque arguments (bytes, long strings) are skipped or checked incrementally, so
 * it never needs more than one window plus the longest line argument in memory. */
typedef struct el_validator el_pv; /* exported as el_validator (elastic_lite.h) */
#define EL_PV_NEED 0 /* more bytes: see el_pv_need */
#define EL_PV_DONE 1 /* finished: the report says ok or why not */
el_pv *el_pv_new(uint64_t stream_len); /* NULL when out of memory */
void el_pv_free(el_pv *v);
/* Bytes [off, off+n) of the stream. A window that does not hold what was asked makes no
 * progress (the same need stands). */
int el_pv_feed(el_pv *v, uint64_t off, const uint8_t *p, size_t n);
/* What to feed next: the window must start at *off and should hold at least *len bytes
 * (the caller may give more). */
void el_pv_need(const el_pv *v, uint64_t *off, uint64_t *len);
el_pickle_report *el_pv_report(el_pv *v); /* valid until el_pv_free */
uint64_t el_pv_stream_length(const el_pv *v);

void el_pickle_validate(const uint8_t *p, size_t n, el_pickle_report *r);
/* Writes el_validate_pickle's JSON for a report of a stream of `size` bytes. */
void el_pickle_report_json(el_buf *b, const el_pickle_report *r, uint64_t size);
void el_pickle_report_free(el_pickle_report *r);
/* Writes the "globals" value (array of [module, name]) for r. */
void el_pickle_globals_json(el_buf *b, const el_pickle_report *r);
/* Writes the "imports" value (array of objects, docs/INTERFACES.md) for r. */
void el_pickle_imports_json(el_buf *b, const el_pickle_report *r);
/* Writes an error object: code (EL_CODE_*), message, offset, record index or -1, opcode. */
void el_error_json(el_buf *b, const char *code, const char *message, uint64_t offset,
                   int64_t record, const char *opcode);

/* The problem codes of error objects (EL_CODE_*) are public: elastic_lite.h. */

/* ---- CRC (crc.c) ---- */
/* Method el_crc32 uses: 5 = five braids (measured by benchmarks/checksum.mjs: fastest
 * natively and in WebAssembly). */
#define EL_CRC32_WIDTH 5
/* The same CRCs with a chosen method (1 bytewise, 8 or 16 slicing, 5 braiding; braiding is
 * implemented for CRC-32 only, CRC32C falls back to slicing-by-16), for the benchmark. */
uint32_t el_crc32_width(int width, uint32_t crc, const uint8_t *p, size_t n);
uint32_t el_crc32c_width(int width, uint32_t crc, const uint8_t *p, size_t n);

/* ---- sink internals the writer uses (sink.c) ---- */
void el_sink_truncate(el_sink *s, size_t size);   /* size <= current size */
void el_sink_drop_front(el_sink *s, size_t n);    /* removes the first n bytes (memmove) */
void el_sink_release(el_sink *s, size_t keep_cap); /* frees the buffer if empty and larger */

#endif
