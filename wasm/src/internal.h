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

/* ---- pickle validator (pickle_validate.c) used by el_validate_pickle and el_inspect ---- */
typedef struct {
  int ok;
  char message[EL_ERRMSG];
  uint64_t offset;    /* offset of the failing opcode in the stream */
  const char *opcode; /* its pickletools name, or NULL (unknown opcode / no opcode) */
  int protocol;       /* highest PROTO seen, 0 if none */
  uint64_t buffers_used; /* NEXT_BUFFER opcodes: out-of-band buffers the stream loads */
  int nomem;          /* ran out of memory (message says so) */
  /* Strings are interned: each distinct string once in arena, string i at
   * arena.data[soff[i]] with length slen[i]. Global i (deduplicated, first-seen order) is the
   * pair of string ids gpair[2i] (module), gpair[2i+1] (name). */
  el_buf arena;
  size_t *soff, *slen;
  size_t nstrings, scap;
  size_t *gpair;
  size_t nglobals, gcap;
} el_pickle_report;

void el_pickle_validate(const uint8_t *p, size_t n, el_pickle_report *r);
void el_pickle_report_free(el_pickle_report *r);
/* Writes "globals": [...] value (the array) for r. */
void el_pickle_globals_json(el_buf *b, const el_pickle_report *r);
/* Writes an error object: code (EL_CODE_*), message, offset, record index or -1, opcode. */
void el_error_json(el_buf *b, const char *code, const char *message, uint64_t offset,
                   int64_t record, const char *opcode);

/* ---- machine-readable error codes (docs/INTERFACES.md): the same strings in C, JS and
 * Python; hosts classify problems by these, never by message text ---- */
#define EL_CODE_NOT_CHECKPOINT "not-checkpoint" /* no checkpoint magic, no footer */
#define EL_CODE_NEWER "newer-format"            /* a major version this reader does not know */
#define EL_CODE_TRUNCATED "truncated"           /* bytes missing at the end */
#define EL_CODE_CHECKSUM "checksum"             /* a CRC does not match */
#define EL_CODE_STRUCTURE "structure"           /* impossible lengths, offsets, magic, padding */
#define EL_CODE_PICKLE "pickle"                 /* the pickle stream validator refused it */
#define EL_CODE_NOMEM "nomem"                   /* ran out of memory while reading */
#define EL_CODE_UNKNOWN_KIND "unknown-kind"     /* record kind of a newer version */
#define EL_CODE_UNKNOWN_SERIALIZER "unknown-serializer" /* serializer code of a newer version */

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
