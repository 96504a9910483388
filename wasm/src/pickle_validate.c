/* Pickle stream validator: walks protocols 0-5 without executing anything.
 *
 * It simulates the unpickler's stack and memo symbolically. A stack slot holds either
 * V_OBJ ("some object") or, for a string literal, the offset of its opcode + 1, so the
 * module and name that STACK_GLOBAL consumes can be traced back through DUP and the memo to
 * the literal bytes. Marks live in their own stack (as in CPython's unpickler): the "fence"
 * is the stack height at the innermost MARK and nothing may pop below it.
 *
 * Limits (hostile input): one loop, no recursion, so nesting depth costs only stack slots;
 * every slot, mark and memo entry is created by at least one input byte, so memory is at most
 * a few machine words per input byte. Memo indices are kept in a dense array only while they
 * stay dense; sparse indices (LONG_BINPUT 4000000000) go to a small hash map, so a huge
 * index never allocates a huge array. Lengths are compared with what is left in the buffer
 * before anything is read; a BINBYTES8 of 2^63 is a plain error. Global names are interned
 * (each literal decoded once, each distinct string stored once), so time stays linear even
 * when a stream names one huge literal many times through the memo. */
#include <stdlib.h>

#include "internal.h"
#include "pickle_ops.h"

#define V_OBJ ((size_t)0)
#define MEMO_EMPTY SIZE_MAX
#define HASH_EMPTY UINT64_MAX
#define HIGHEST_PROTOCOL 5
#define NO_OPCODE 256u

/* Open-addressing hash map from uint64 keys (never UINT64_MAX) to size_t values. */
typedef struct {
  uint64_t *keys;
  size_t *vals;
  size_t cap, count;
} u64map;

typedef struct {
  const uint8_t *p;
  size_t n;
  el_pickle_report *r;
  size_t *stack;
  size_t scap;
  size_t *marks;
  size_t nmarks, mcap;
  size_t *memo; /* dense part: memo[i] for i < memo_cap */
  size_t memo_cap, memo_count;
  u64map sparse;  /* memo entries whose index is far beyond the dense part */
  uint64_t sparse_min; /* smallest key in sparse (UINT64_MAX if none) */
  u64map literal; /* offset of a string literal's opcode -> interned string id */
  u64map pairs;   /* (module id << 32 | name id) of every global seen */
  size_t *stab;   /* hash set over interned strings: id + 1, 0 = empty */
  size_t stab_cap;
  size_t op_off;
  unsigned op;
} vs;

static void verr(vs *v, const char *fmt, ...) {
  el_pickle_report *r = v->r;
  if (!r->ok) return;
  r->ok = 0;
  r->offset = v->op_off;
  r->opcode = el_pickle_op_name(v->op);
  size_t k = 0;
  if (r->opcode) {
    el_fmt(r->message, sizeof r->message, "%s at offset %u: ", r->opcode, (uint64_t)v->op_off);
    k = strlen(r->message);
  }
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(r->message + k, sizeof r->message - k, fmt, ap);
  va_end(ap);
}

static void vnomem(vs *v, const char *what) {
  verr(v, "out of memory while validating (%s)", what);
  v->r->nomem = 1;
}

/* ---- memo ------------------------------------------------------------------------------ */

static size_t hslot(uint64_t key, size_t cap) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

/* Sets m[key] = val; *added tells whether key is new. 0 if out of memory. */
static int map_put(u64map *m, uint64_t key, size_t val, int *added) {
  if (2 * (m->count + 1) > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *k = malloc(cap * sizeof *k);
    size_t *x = malloc(cap * sizeof *x);
    if (!k || !x) {
      free(k);
      free(x);
      return 0;
    }
    memset(k, 0xFF, cap * sizeof *k);
    for (size_t i = 0; i < m->cap; i++) {
      if (m->keys[i] == HASH_EMPTY) continue;
      size_t s = hslot(m->keys[i], cap);
      while (k[s] != HASH_EMPTY) s = (s + 1) & (cap - 1);
      k[s] = m->keys[i];
      x[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = x;
    m->cap = cap;
  }
  size_t s = hslot(key, m->cap);
  while (m->keys[s] != HASH_EMPTY && m->keys[s] != key) s = (s + 1) & (m->cap - 1);
  *added = m->keys[s] == HASH_EMPTY;
  if (*added) m->count++;
  m->keys[s] = key;
  m->vals[s] = val;
  return 1;
}

/* m[key], or MEMO_EMPTY. */
static size_t map_get(const u64map *m, uint64_t key) {
  if (!m->cap) return MEMO_EMPTY;
  size_t s = hslot(key, m->cap);
  while (m->keys[s] != HASH_EMPTY) {
    if (m->keys[s] == key) return m->vals[s];
    s = (s + 1) & (m->cap - 1);
  }
  return MEMO_EMPTY;
}

static void map_free(u64map *m) {
  free(m->keys);
  free(m->vals);
}

/* Stores val at memo[key]; 0 after reporting an error. */
static int memo_put(vs *v, uint64_t key, size_t val) {
  int added;
  if (key < v->memo_cap) {
    added = v->memo[key] == MEMO_EMPTY;
    v->memo[key] = val;
  } else if (key <= 2 * (uint64_t)v->memo_count + 64 && key < v->sparse_min) {
    /* still dense: extend the array, doubling, but never over a key already kept in the
     * sparse map (each key lives in exactly one of the two places) */
    size_t old = v->memo_cap, cap = old ? old : 64;
    while (cap <= key) cap *= 2;
    if ((uint64_t)cap > v->sparse_min) cap = (size_t)v->sparse_min;
    size_t *m = cap <= SIZE_MAX / sizeof *m ? realloc(v->memo, cap * sizeof *m) : NULL;
    if (!m) {
      vnomem(v, "memo");
      return 0;
    }
    v->memo = m;
    v->memo_cap = cap;
    memset(v->memo + old, 0xFF, (cap - old) * sizeof *v->memo);
    added = 1;
    v->memo[key] = val;
  } else if (map_put(&v->sparse, key, val, &added)) {
    if (key < v->sparse_min) v->sparse_min = key;
  } else {
    vnomem(v, "memo");
    return 0;
  }
  v->memo_count += (size_t)added;
  return 1;
}

/* Value at memo[key], or MEMO_EMPTY. */
static size_t memo_get(const vs *v, uint64_t key) {
  if (key < v->memo_cap) return v->memo[key];
  return map_get(&v->sparse, key);
}

/* ---- argument checks ------------------------------------------------------------------- */

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* [+-]?[0-9]+ followed by an optional 'L' when allow_l. */
static int check_decimal(const uint8_t *s, size_t n, int allow_l) {
  size_t i = 0;
  if (allow_l && n && s[n - 1] == 'L') n--;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  if (i == n) return 0;
  for (; i < n; i++)
    if (!is_digit(s[i])) return 0;
  return 1;
}

/* Unsigned decimal memo index; 0 if malformed or above 2^63-1. */
static int parse_index(const uint8_t *s, size_t n, uint64_t *out) {
  if (!n || n > 19) return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < n; i++) {
    if (!is_digit(s[i])) return 0;
    v = v * 10 + (uint64_t)(s[i] - '0');
  }
  if (v > (uint64_t)INT64_MAX) return 0;
  *out = v;
  return 1;
}

static int lower_eq(const uint8_t *s, size_t n, const char *w) {
  size_t k = strlen(w);
  if (n != k) return 0;
  for (size_t i = 0; i < n; i++)
    if ((s[i] | 0x20) != (uint8_t)w[i]) return 0;
  return 1;
}

/* What float() accepts from repr(): decimal with optional exponent, inf, infinity, nan. */
static int check_float(const uint8_t *s, size_t n) {
  size_t i = 0, digits = 0;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  if (lower_eq(s + i, n - i, "inf") || lower_eq(s + i, n - i, "infinity") ||
      lower_eq(s + i, n - i, "nan"))
    return 1;
  while (i < n && is_digit(s[i])) i++, digits++;
  if (i < n && s[i] == '.') {
    i++;
    while (i < n && is_digit(s[i])) i++, digits++;
  }
  if (!digits) return 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    if (i == n || !is_digit(s[i])) return 0;
    while (i < n && is_digit(s[i])) i++;
  }
  return i == n;
}

/* STRING argument: a quoted Python 2 str repr whose escapes decode. */
static int check_string_repr(const uint8_t *s, size_t n) {
  if (n < 2 || s[0] != s[n - 1] || (s[0] != '\'' && s[0] != '"')) return 0;
  for (size_t i = 1; i + 1 < n; i++) {
    if (s[i] != '\\') continue;
    if (i + 2 >= n) return 0; /* trailing backslash */
    if (s[i + 1] == 'x') {
      if (i + 3 >= n || hexval(s[i + 2]) < 0 || hexval(s[i + 3]) < 0) return 0;
      i += 3;
    } else {
      i += 1;
    }
  }
  return 1;
}

/* Decodes a raw-unicode-escape argument (UNICODE). With out == NULL it only checks.
 * Returns 1 if well formed. Only \uXXXX and \UXXXXXXXX are escapes; other bytes are
 * Latin-1 code points (a backslash pair is two literal backslashes). */
static int raw_unicode_escape(const uint8_t *s, size_t n, el_buf *out) {
  for (size_t i = 0; i < n; i++) {
    uint32_t cp = s[i];
    if (s[i] == '\\' && i + 1 < n && (s[i + 1] == 'u' || s[i + 1] == 'U')) {
      size_t k = s[i + 1] == 'u' ? 4 : 8;
      if (n - i - 2 < k) return 0;
      cp = 0;
      for (size_t j = 0; j < k; j++) {
        int h = hexval(s[i + 2 + j]);
        if (h < 0) return 0;
        cp = (cp << 4) | (uint32_t)h;
        if (cp > 0x10FFFF) return 0;
      }
      i += 1 + k;
    } else if (s[i] == '\\' && i + 1 < n) { /* "\\x": both literal */
      if (out) el_buf_codepoint(out, '\\');
      cp = s[++i];
    }
    if (out) el_buf_codepoint(out, cp);
  }
  return 1;
}

/* ---- globals ---------------------------------------------------------------------------- */

static uint64_t fnv(const uint8_t *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull;
  return h;
}

/* Interns the string just appended to the arena at [start, len): returns its id (an
 * earlier id when the same content was seen before; the copy is dropped), or SIZE_MAX after
 * reporting out of memory. Interning makes every later comparison O(1), so a stream that
 * names one long string many times costs time linear in its size. */
static size_t intern_tail(vs *v, size_t start) {
  el_pickle_report *r = v->r;
  el_buf *a = &r->arena;
  if (!a->data) el_buf_put(a, "", 0); /* allocates: empty names must not index a NULL arena */
  if (a->failed) {
    vnomem(v, "globals");
    return SIZE_MAX;
  }
  const uint8_t *str = (const uint8_t *)a->data + start;
  size_t len = a->len - start;
  uint64_t h = fnv(str, len, 0xCBF29CE484222325ull);
  if (2 * (r->nstrings + 1) > v->stab_cap) { /* rehash into a table twice as big */
    size_t cap = v->stab_cap ? v->stab_cap * 2 : 64;
    size_t *t = calloc(cap, sizeof *t);
    if (!t) {
      vnomem(v, "globals");
      return SIZE_MAX;
    }
    for (size_t i = 0; i < r->nstrings; i++) {
      size_t s = (size_t)fnv((const uint8_t *)a->data + r->soff[i], r->slen[i], 0xCBF29CE484222325ull) & (cap - 1);
      while (t[s]) s = (s + 1) & (cap - 1);
      t[s] = i + 1;
    }
    free(v->stab);
    v->stab = t;
    v->stab_cap = cap;
  }
  size_t s = (size_t)h & (v->stab_cap - 1);
  while (v->stab[s]) {
    size_t i = v->stab[s] - 1;
    if (r->slen[i] == len && !memcmp(a->data + r->soff[i], str, len)) {
      a->len = start; /* seen before */
      return i;
    }
    s = (s + 1) & (v->stab_cap - 1);
  }
  if (r->nstrings == r->scap) {
    size_t c1 = r->scap, c2 = r->scap;
    if (!el_grow((void **)&r->soff, &c1, r->nstrings + 1, sizeof(size_t)) ||
        !el_grow((void **)&r->slen, &c2, r->nstrings + 1, sizeof(size_t))) {
      vnomem(v, "globals");
      return SIZE_MAX;
    }
    r->scap = c1 < c2 ? c1 : c2;
  }
  size_t id = r->nstrings++;
  r->soff[id] = start;
  r->slen[id] = len;
  v->stab[s] = id + 1;
  return id;
}

/* Records the global (module id, name id) unless seen before. 0 after reporting an error. */
static int add_global(vs *v, size_t mid, size_t nid) {
  el_pickle_report *r = v->r;
  if (mid == SIZE_MAX || nid == SIZE_MAX) return 0;
  if ((uint64_t)mid > 0xFFFFFFFFu || (uint64_t)nid > 0xFFFFFFFFu) {
    verr(v, "too many distinct names (more than 2^32)");
    return 0;
  }
  int added;
  if (!map_put(&v->pairs, ((uint64_t)mid << 32) | nid, 0, &added)) {
    vnomem(v, "globals");
    return 0;
  }
  if (!added) return 1;
  if (r->nglobals == r->gcap) {
    size_t c = 2 * r->gcap;
    if (!el_grow((void **)&r->gpair, &c, 2 * (r->nglobals + 1), sizeof(size_t))) {
      vnomem(v, "globals");
      return 0;
    }
    r->gcap = c / 2;
  }
  r->gpair[2 * r->nglobals] = mid;
  r->gpair[2 * r->nglobals + 1] = nid;
  r->nglobals++;
  return 1;
}

/* Appends the decoded value of the string literal whose opcode is at off. */
static void decode_literal(vs *v, size_t off) {
  const uint8_t *p = v->p + off;
  el_buf *a = &v->r->arena;
  switch (p[0]) {
    case OP_SHORT_BINUNICODE: el_buf_put(a, p + 2, p[1]); break;
    case OP_BINUNICODE: el_buf_put(a, p + 5, el_ld32(p + 1)); break;
    case OP_BINUNICODE8: el_buf_put(a, p + 9, (size_t)el_ld64(p + 1)); break;
    case OP_SHORT_BINSTRING: /* Python 2 str: decoded as Latin-1 (ASCII is the default) */
      for (size_t i = 0; i < p[1]; i++) el_buf_codepoint(a, p[2 + i]);
      break;
    case OP_BINSTRING:
      for (size_t i = 0, k = el_ld32(p + 1); i < k; i++) el_buf_codepoint(a, p[5 + i]);
      break;
    case OP_UNICODE: {
      const uint8_t *e = memchr(p + 1, '\n', v->n - off - 1);
      raw_unicode_escape(p + 1, (size_t)(e - p - 1), a);
      break;
    }
    default: break; /* not reached: only the opcodes above push literals */
  }
}

/* Interned id of the string literal whose opcode is at off (decoded once per literal). */
static size_t literal_id(vs *v, size_t off) {
  size_t id = map_get(&v->literal, off);
  if (id != MEMO_EMPTY) return id;
  size_t start = v->r->arena.len;
  decode_literal(v, off);
  id = intern_tail(v, start);
  int added;
  if (id != SIZE_MAX && !map_put(&v->literal, off, id, &added)) {
    vnomem(v, "globals");
    return SIZE_MAX;
  }
  return id;
}

/* ---- the walk ---------------------------------------------------------------------------- */

void el_pickle_report_free(el_pickle_report *r) {
  el_buf_free(&r->arena);
  free(r->soff);
  free(r->slen);
  free(r->gpair);
  r->soff = r->slen = r->gpair = NULL;
  r->nstrings = r->scap = r->nglobals = r->gcap = 0;
}

void el_pickle_validate(const uint8_t *p, size_t n, el_pickle_report *r) {
  memset(r, 0, sizeof *r);
  r->ok = 1;
  vs V;
  memset(&V, 0, sizeof V);
  vs *v = &V;
  v->p = p;
  v->n = n;
  v->r = r;
  v->op = NO_OPCODE;
  v->sparse_min = UINT64_MAX;
  if (!p && n) {
    verr(v, "no data (NULL pointer)");
    return;
  }
  if (n == 0) {
    verr(v, "empty stream: there is no pickle data (expected at least one opcode and STOP)");
    return;
  }
  if (n > SIZE_MAX / 4) {
    verr(v, "stream of %u bytes is too large to validate", (uint64_t)n);
    return;
  }

  size_t pos = 0, sp = 0, fence = 0, frame_end = 0;
  int stopped = 0;

#define FAIL(...)           \
  do {                      \
    verr(v, __VA_ARGS__);   \
    goto done;              \
  } while (0)
#define NEED(k)                                                                              \
  do {                                                                                       \
    if ((uint64_t)(n - pos) < (uint64_t)(k))                                                 \
      FAIL("argument needs %u bytes but only %u are left (truncated stream?)", (uint64_t)(k), \
           (uint64_t)(n - pos));                                                             \
  } while (0)
#define NEEDLEN(len, what)                                                                  \
  do {                                                                                      \
    if ((uint64_t)(n - pos) < (uint64_t)(len))                                              \
      FAIL("%s length %u runs past the end of the stream (%u bytes left)", what,             \
           (uint64_t)(len), (uint64_t)(n - pos));                                           \
  } while (0)
#define NEEDOBJS(k)                                                                       \
  do {                                                                                    \
    if (sp - fence < (size_t)(k))                                                         \
      FAIL("needs %u objects on the stack but finds %u%s (stack underflow)", (uint64_t)(k), \
           (uint64_t)(sp - fence), v->nmarks ? " above the last MARK" : "");              \
  } while (0)
#define PUSH(val)                                                               \
  do {                                                                          \
    if (sp == v->scap && !el_grow((void **)&v->stack, &v->scap, sp + 1, sizeof(size_t))) { \
      vnomem(v, "stack");                                                       \
      goto done;                                                                \
    }                                                                           \
    v->stack[sp++] = (val);                                                     \
  } while (0)
#define LINE(start, len)                                                             \
  do {                                                                               \
    const uint8_t *nl_ = memchr(p + pos, '\n', n - pos);                             \
    if (!nl_) FAIL("argument line has no terminating newline (truncated stream?)");   \
    start = pos;                                                                     \
    len = (size_t)(nl_ - p) - pos;                                                   \
    pos += len + 1;                                                                  \
  } while (0)
/* closes the innermost MARK: count = objects above it */
#define POP_MARK(count)                                                   \
  do {                                                                    \
    if (!v->nmarks) FAIL("there is no MARK to close (unbalanced marks)"); \
    count = sp - fence;                                                   \
    sp = fence;                                                           \
    v->nmarks--;                                                          \
    fence = v->nmarks ? v->marks[v->nmarks - 1] : 0;                      \
  } while (0)

  while (pos < n) {
    size_t off = pos, a, len, cnt;
    uint64_t key, len64;
    unsigned op = p[pos++];
    v->op_off = off;
    v->op = op;
    if (frame_end && off >= frame_end) frame_end = 0;
    switch (op) {
      /* -- literals without arguments -- */
      case OP_NONE: case OP_NEWTRUE: case OP_NEWFALSE: case OP_EMPTY_LIST: case OP_EMPTY_TUPLE:
      case OP_EMPTY_DICT: case OP_EMPTY_SET:
        PUSH(V_OBJ);
        break;
      case OP_NEXT_BUFFER:
        r->buffers_used++;
        PUSH(V_OBJ);
        break;
      /* -- fixed-size numbers -- */
      case OP_BININT1: NEED(1); pos += 1; PUSH(V_OBJ); break;
      case OP_BININT2: NEED(2); pos += 2; PUSH(V_OBJ); break;
      case OP_BININT: NEED(4); pos += 4; PUSH(V_OBJ); break;
      case OP_BINFLOAT: NEED(8); pos += 8; PUSH(V_OBJ); break;
      case OP_LONG1:
        NEED(1);
        len = p[pos++];
        NEEDLEN(len, "LONG1");
        pos += len;
        PUSH(V_OBJ);
        break;
      case OP_LONG4: {
        NEED(4);
        int32_t l = (int32_t)el_ld32(p + pos);
        pos += 4;
        if (l < 0) FAIL("negative byte count %d", (int64_t)l);
        NEEDLEN(l, "LONG4");
        pos += (size_t)l;
        PUSH(V_OBJ);
        break;
      }
      /* -- text numbers -- */
      case OP_INT:
        LINE(a, len);
        if (!check_decimal(p + a, len, 0)) FAIL("argument is not a decimal integer");
        PUSH(V_OBJ);
        break;
      case OP_LONG:
        LINE(a, len);
        if (!check_decimal(p + a, len, 1)) FAIL("argument is not a decimal integer");
        PUSH(V_OBJ);
        break;
      case OP_FLOAT:
        LINE(a, len);
        if (!check_float(p + a, len)) FAIL("argument is not a float literal");
        PUSH(V_OBJ);
        break;
      /* -- bytes -- */
      case OP_SHORT_BINBYTES:
        NEED(1);
        len = p[pos++];
        NEEDLEN(len, "SHORT_BINBYTES");
        pos += len;
        PUSH(V_OBJ);
        break;
      case OP_BINBYTES:
        NEED(4);
        len64 = el_ld32(p + pos);
        pos += 4;
        NEEDLEN(len64, "BINBYTES");
        pos += (size_t)len64;
        PUSH(V_OBJ);
        break;
      case OP_BINBYTES8: case OP_BYTEARRAY8:
        NEED(8);
        len64 = el_ld64(p + pos);
        pos += 8;
        NEEDLEN(len64, op == OP_BINBYTES8 ? "BINBYTES8" : "BYTEARRAY8");
        pos += (size_t)len64;
        PUSH(V_OBJ);
        break;
      /* -- text: string literals keep their offset so STACK_GLOBAL can trace them -- */
      case OP_SHORT_BINUNICODE: case OP_BINUNICODE: case OP_BINUNICODE8: {
        size_t w = op == OP_SHORT_BINUNICODE ? 1 : op == OP_BINUNICODE ? 4 : 8;
        NEED(w);
        len64 = w == 1 ? p[pos] : w == 4 ? el_ld32(p + pos) : el_ld64(p + pos);
        pos += w;
        NEEDLEN(len64, el_pickle_op_name(op));
        len = (size_t)len64;
        uint8_t any = 0; /* ASCII is the common case and needs no decoding check */
        for (size_t i = 0; i < len; i++) any |= p[pos + i];
        if (any & 0x80) {
          size_t ok = el_utf8_valid_prefix(p + pos, len, 1);
          if (ok != len) FAIL("string is not valid UTF-8 (bad byte at offset %u)", (uint64_t)(pos + ok));
        }
        pos += len;
        PUSH(off + 1);
        break;
      }
      case OP_SHORT_BINSTRING:
        NEED(1);
        len = p[pos++];
        NEEDLEN(len, "SHORT_BINSTRING");
        pos += len;
        PUSH(off + 1);
        break;
      case OP_BINSTRING: {
        NEED(4);
        int32_t l = (int32_t)el_ld32(p + pos);
        pos += 4;
        if (l < 0) FAIL("negative byte count %d", (int64_t)l);
        NEEDLEN(l, "BINSTRING");
        pos += (size_t)l;
        PUSH(off + 1);
        break;
      }
      case OP_UNICODE:
        LINE(a, len);
        if (!raw_unicode_escape(p + a, len, NULL)) FAIL("argument has a bad \\u or \\U escape");
        PUSH(off + 1);
        break;
      case OP_STRING:
        LINE(a, len);
        if (!check_string_repr(p + a, len)) FAIL("argument is not a quoted string with valid escapes");
        PUSH(V_OBJ); /* not traced: no pickler uses STRING for STACK_GLOBAL operands */
        break;
      /* -- containers -- */
      case OP_APPEND: NEEDOBJS(2); sp -= 1; break;
      case OP_SETITEM: NEEDOBJS(3); sp -= 2; break;
      case OP_TUPLE1: NEEDOBJS(1); v->stack[sp - 1] = V_OBJ; break;
      case OP_TUPLE2: NEEDOBJS(2); sp -= 1; v->stack[sp - 1] = V_OBJ; break;
      case OP_TUPLE3: NEEDOBJS(3); sp -= 2; v->stack[sp - 1] = V_OBJ; break;
      case OP_LIST: case OP_TUPLE: case OP_FROZENSET:
        POP_MARK(cnt);
        PUSH(V_OBJ);
        break;
      case OP_DICT:
        POP_MARK(cnt);
        if (cnt & 1) FAIL("odd number of items (%u) for DICT", (uint64_t)cnt);
        PUSH(V_OBJ);
        break;
      case OP_APPENDS: case OP_SETITEMS: case OP_ADDITEMS:
        POP_MARK(cnt);
        if (op == OP_SETITEMS && (cnt & 1)) FAIL("odd number of items (%u) for SETITEMS", (uint64_t)cnt);
        if (sp == fence) FAIL("no container below the MARK to add items to (stack underflow)");
        break;
      /* -- stack and marks -- */
      case OP_MARK:
        if (v->nmarks == v->mcap &&
            !el_grow((void **)&v->marks, &v->mcap, v->nmarks + 1, sizeof(size_t))) {
          vnomem(v, "marks");
          goto done;
        }
        v->marks[v->nmarks++] = fence = sp;
        break;
      case OP_POP:
        if (sp > fence) sp--;
        else if (v->nmarks) POP_MARK(cnt); /* as CPython does: POP on a mark drops the mark */
        else FAIL("stack is empty (stack underflow)");
        break;
      case OP_POP_MARK: POP_MARK(cnt); break;
      case OP_DUP: {
        NEEDOBJS(1);
        size_t top = v->stack[sp - 1];
        PUSH(top);
        break;
      }
      /* -- memo -- */
      case OP_PUT:
        LINE(a, len);
        if (!parse_index(p + a, len, &key)) FAIL("argument is not a memo index (0 to 2^63-1)");
        goto put;
      case OP_BINPUT: NEED(1); key = p[pos++]; goto put;
      case OP_LONG_BINPUT: NEED(4); key = el_ld32(p + pos); pos += 4; goto put;
      case OP_MEMOIZE: key = v->memo_count;
      put:
        NEEDOBJS(1);
        if (!memo_put(v, key, v->stack[sp - 1])) goto done;
        break;
      case OP_GET:
        LINE(a, len);
        if (!parse_index(p + a, len, &key)) FAIL("argument is not a memo index (0 to 2^63-1)");
        goto get;
      case OP_BINGET: NEED(1); key = p[pos++]; goto get;
      case OP_LONG_BINGET:
        NEED(4);
        key = el_ld32(p + pos);
        pos += 4;
      get: {
        size_t val = memo_get(v, key);
        if (val == MEMO_EMPTY) FAIL("memo has no entry %u", key);
        PUSH(val);
        break;
      }
      /* -- globals and object construction -- */
      case OP_GLOBAL: case OP_INST: {
        size_t ma, ml, na, nl;
        LINE(ma, ml);
        LINE(na, nl);
        if (!ml || !nl) FAIL("module or name is empty");
        if (el_utf8_valid_prefix(p + ma, ml, 0) != ml || el_utf8_valid_prefix(p + na, nl, 0) != nl)
          FAIL("module or name is not valid UTF-8");
        size_t m0 = r->arena.len;
        el_buf_put(&r->arena, p + ma, ml);
        size_t mid = intern_tail(v, m0);
        size_t n0 = r->arena.len;
        el_buf_put(&r->arena, p + na, nl);
        if (!add_global(v, mid, intern_tail(v, n0))) goto done;
        if (op == OP_INST) POP_MARK(cnt);
        PUSH(V_OBJ);
        break;
      }
      case OP_STACK_GLOBAL: {
        NEEDOBJS(2);
        size_t mv = v->stack[sp - 2], nv = v->stack[sp - 1];
        if (mv == V_OBJ || nv == V_OBJ)
          FAIL("module and name are not string literals (they would be computed while "
               "loading), so what this imports cannot be known before running it");
        size_t mid = literal_id(v, mv - 1);
        if (!add_global(v, mid, literal_id(v, nv - 1))) goto done;
        sp -= 1;
        v->stack[sp - 1] = V_OBJ;
        break;
      }
      case OP_EXT1: case OP_EXT2: case OP_EXT4: {
        size_t w = op == OP_EXT1 ? 1 : op == OP_EXT2 ? 2 : 4;
        NEED(w);
        int64_t code = w == 1 ? p[pos] : w == 2 ? el_ld16(p + pos) : (int32_t)el_ld32(p + pos);
        pos += w;
        if (code <= 0) FAIL("extension code %d is not positive", code);
        /* the extension registry maps the code to a global: show it as such */
        size_t m0 = r->arena.len;
        el_buf_puts(&r->arena, "copyreg._extension_registry");
        size_t mid = intern_tail(v, m0);
        size_t n0 = r->arena.len;
        el_buf_u64(&r->arena, (uint64_t)code);
        if (!add_global(v, mid, intern_tail(v, n0))) goto done;
        PUSH(V_OBJ);
        break;
      }
      case OP_REDUCE: case OP_BUILD: case OP_NEWOBJ:
        NEEDOBJS(2);
        sp -= 1;
        v->stack[sp - 1] = V_OBJ;
        break;
      case OP_NEWOBJ_EX:
        NEEDOBJS(3);
        sp -= 2;
        v->stack[sp - 1] = V_OBJ;
        break;
      case OP_OBJ:
        POP_MARK(cnt);
        if (cnt < 1) FAIL("needs a class after the MARK (stack underflow)");
        PUSH(V_OBJ);
        break;
      case OP_PERSID:
        LINE(a, len);
        for (size_t i = 0; i < len; i++)
          if (p[a + i] & 0x80) FAIL("persistent id is not ASCII");
        PUSH(V_OBJ);
        break;
      case OP_BINPERSID: case OP_READONLY_BUFFER:
        NEEDOBJS(1);
        v->stack[sp - 1] = V_OBJ;
        break;
      /* -- framing and protocol -- */
      case OP_PROTO:
        NEED(1);
        if (p[pos] > HIGHEST_PROTOCOL)
          FAIL("unsupported pickle protocol %u (this validator knows 0 to 5)", (uint64_t)p[pos]);
        if (p[pos] > r->protocol) r->protocol = p[pos];
        pos += 1;
        break;
      case OP_FRAME:
        NEED(8);
        len64 = el_ld64(p + pos);
        pos += 8;
        if (frame_end)
          FAIL("a new frame starts before the current frame ends (at offset %u)", (uint64_t)frame_end);
        NEEDLEN(len64, "frame");
        frame_end = pos + (size_t)len64;
        break;
      case OP_STOP:
        NEEDOBJS(1);
        sp -= 1;
        if (sp || v->nmarks)
          FAIL("stack is not empty at STOP (%u objects and %u MARKs left)", (uint64_t)sp,
               (uint64_t)v->nmarks);
        stopped = 1;
        break;
      default: {
        char hx[5] = {'0', 'x', "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15], 0};
        FAIL("unknown opcode %s at offset %u (not a pickle, or a corrupted one)", hx, (uint64_t)off);
      }
    }
    if (frame_end && pos > frame_end)
      FAIL("opcode runs past the end of its frame (frame ends at offset %u)", (uint64_t)frame_end);
    if (stopped) break;
  }
  if (!stopped) {
    v->op_off = n;
    v->op = NO_OPCODE;
    FAIL("stream ends at offset %u without STOP (truncated stream?)", (uint64_t)n);
  }
  if (pos != n) {
    v->op_off = pos;
    v->op = NO_OPCODE;
    FAIL("%u bytes of data after STOP at offset %u (only one pickle per stream)",
         (uint64_t)(n - pos), (uint64_t)(pos - 1));
  }
done:
  if (r->arena.failed && r->ok) vnomem(v, "globals");
  free(v->stack);
  free(v->marks);
  free(v->memo);
  map_free(&v->sparse);
  map_free(&v->literal);
  map_free(&v->pairs);
  free(v->stab);
#undef FAIL
#undef NEED
#undef NEEDLEN
#undef NEEDOBJS
#undef PUSH
#undef LINE
#undef POP_MARK
}

void el_pickle_globals_json(el_buf *b, const el_pickle_report *r) {
  el_buf_put(b, "[", 1);
  for (size_t i = 0; i < r->nglobals; i++) {
    if (i) el_buf_put(b, ",", 1);
    el_buf_put(b, "[", 1);
    size_t m = r->gpair[2 * i], nm = r->gpair[2 * i + 1];
    el_buf_json_str(b, (const uint8_t *)r->arena.data + r->soff[m], r->slen[m]);
    el_buf_put(b, ",", 1);
    el_buf_json_str(b, (const uint8_t *)r->arena.data + r->soff[nm], r->slen[nm]);
    el_buf_put(b, "]", 1);
  }
  el_buf_put(b, "]", 1);
}
