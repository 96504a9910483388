/* The pickle stream validator's private parts, shared by its three files:
 *   pickle_args.c      syntax of opcode arguments (decimal, float, quoted strings, escapes)
 *   pickle_names.c     interned strings, the imports a stream makes, a small hash map
 *   pickle_validate.c  the resumable walk over the opcodes, by opcode family
 * The report type (el_pickle_report) is in internal.h: the reader uses it too. */
#ifndef EL_PICKLE_H
#define EL_PICKLE_H

#include "internal.h"

/* ---- pickle_args.c ---- */
int el_pk_check_decimal(const uint8_t *s, size_t n, int allow_l); /* [+-]?[0-9]+ L? */
int el_pk_parse_index(const uint8_t *s, size_t n, uint64_t *out); /* memo index 0..2^63-1 */
int el_pk_check_float(const uint8_t *s, size_t n);                /* what float() reads */
int el_pk_check_string_repr(const uint8_t *s, size_t n);          /* STRING: quoted, escapes */
/* UNICODE's raw-unicode-escape: checks, and appends the decoded UTF-8 to out if not NULL. */
int el_pk_raw_unicode_escape(const uint8_t *s, size_t n, el_buf *out);

/* ---- pickle_names.c ---- */
/* Open-addressing hash map from uint64 keys (never UINT64_MAX) to uint64 values. */
typedef struct {
  uint64_t *keys;
  uint64_t *vals;
  size_t cap, count;
} el_u64map;
#define EL_MAP_NONE UINT64_MAX
int el_map_put(el_u64map *m, uint64_t key, uint64_t val, int *added); /* 0: out of memory */
uint64_t el_map_get(const el_u64map *m, uint64_t key);                /* or EL_MAP_NONE */
void el_map_free(el_u64map *m);

/* Interned strings and imports, kept in the report (el_pickle_report). */
typedef struct {
  el_u64map pairs;   /* (module id << 32 | name id) of every global seen */
  size_t *stab;      /* hash set over interned strings: id + 1, 0 = empty */
  size_t stab_cap;
  size_t *itab;      /* hash set over imports: index + 1, 0 = empty */
  size_t itab_cap;
} el_names;

/* Interns the string appended to r->arena at [start, len): its id, or SIZE_MAX when out of
 * memory (the copy is dropped when the same content was seen before). */
size_t el_intern_tail(el_names *t, el_pickle_report *r, size_t start);
size_t el_intern(el_names *t, el_pickle_report *r, const uint8_t *s, size_t n);
/* Records that the stream imports module.name (ids) by opcode op under protocol proto (ext:
 * the EXT code, else 0); *index: its entry in r->imports. 0 when out of memory, -1 when
 * there are too many names. */
int el_add_import(el_names *t, el_pickle_report *r, size_t mid, size_t nid, unsigned op,
                  int proto, int64_t ext, size_t *index);
void el_names_free(el_names *t);

#endif
