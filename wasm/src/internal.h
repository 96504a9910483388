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
/* Writes the error object (or null) for r; offsets shifted by base, record index or -1. */
void el_error_json(el_buf *b, const char *message, uint64_t offset, int64_t record,
                   const char *opcode);

/* Container layout constants (see FORMAT.md). */
#define EL_MAGIC "\x89" "ELCKPT\n"
#define EL_HEADER_FIXED 32 /* magic..python_len, before producer bytes */
#define EL_REC_MAGIC "ELRC"
#define EL_REC_FIXED 32 /* record header before names */
#define EL_IDX_MAGIC "ELIX"
#define EL_FOOTER_MAGIC "ELFT"
#define EL_FOOTER_SIZE 32

#endif
