/* Pickle stream validator: walks protocols 0-5 without executing anything, resumably.
 *
 * It simulates the unpickler's stack and memo symbolically. A stack or memo value says what
 * is known of an object: nothing (V_OBJ), or that it is a string literal of the stream (the
 * offset of its opcode), or an interned string. So the module and name that STACK_GLOBAL
 * consumes can be traced back through DUP and the memo to the literal bytes. Marks live in
 * their own stack (as in CPython's unpickler): the "fence" is the stack height at the
 * innermost MARK and nothing may pop below it.
 *
 * Resumable: the stream arrives in windows (el_pv_feed). An opcode is processed only when
 * every byte it needs is in the window, else the validator asks for a window that starts at
 * the opcode (el_pv_need): at most one opcode is read twice per window. Opaque content
 * (bytes, longs, Python 2 strings) is skipped without being read; a long UTF-8 string is
 * checked piece by piece. A literal is decoded only when STACK_GLOBAL uses it; if its window
 * is gone by then, the validator asks for its bytes again. With the whole stream as one
 * window (el_pickle_validate) nothing is ever asked for.
 *
 * The opcodes are handled by family, as CPython's unpickler groups them: constants, numbers,
 * bytes, strings, containers, stack and marks, memo, globals, object construction, framing.
 *
 * Limits (hostile input): one loop, no recursion, so nesting depth costs only stack slots;
 * every slot, mark and memo entry is created by at least one input byte, so memory is at most
 * a few machine words per input byte. Memo indices are kept in a dense array only while they
 * stay dense; sparse indices (LONG_BINPUT 4000000000) go to a small hash map, so a huge
 * index never allocates a huge array. Lengths are compared with what is left in the stream
 * before anything is read; a BINBYTES8 of 2^63 is a plain error. */
#include <stdlib.h>

#include "pickle.h"
#include "pickle_ops.h"

#define HIGHEST_PROTOCOL 5
#define NO_OPCODE 256u
#define MEMO_EMPTY UINT64_MAX

/* Values on the simulated stack and in the memo. */
#define V_OBJ 0u                 /* some object */
#define TAG_IMPORT 1u            /* (index << 2) | 1: the object an import of r.imports gives */
#define TAG_LITERAL 2u           /* (opcode offset << 2) | 2: a string literal of the stream */
#define TAG_INTERNED 3u          /* (id << 2) | 3: an interned string */
#define IS_STRING(v) (((v) & 2u) != 0)

typedef enum { ST_OK, ST_NEED, ST_ERR, ST_DONE } step;

/* The opcode families take the opcode as a parameter; inlined into the one dispatch switch,
 * where it is a constant, their own switch on it disappears (one branch per opcode). */
#if defined(__GNUC__)
#define FAMILY static inline __attribute__((always_inline)) step
#define COLD __attribute__((cold, noinline)) /* errors and requests: off the hot path */
#else
#define FAMILY static step
#define COLD
#endif /* DONE: STOP ended the stream */
enum { M_OPS, M_UTF8 }; /* walking opcodes / inside a long UTF-8 string's content */

struct el_validator {
  uint64_t n;          /* stream length */
  const uint8_t *w;    /* the window being fed: stream bytes [w_off, w_end) */
  uint64_t w_off, w_end;
  uintptr_t base;      /* address of stream byte 0 if the window extended there: at() */
  uint64_t pos;        /* next opcode (M_OPS) or next content byte (M_UTF8) */
  int mode;
  uint64_t content_end; /* M_UTF8: end of the string's content */
  uint64_t need_off, need_len;
  uint64_t fetch_off;  /* a literal STACK_GLOBAL waits for, or EL_MAP_NONE */
  int done;
  uint64_t *stack;
  size_t sp, scap;
  size_t *marks; /* stack heights at each open MARK */
  size_t nmarks, mcap, fence;
  uint64_t *memo; /* dense part: memo[i] for i < memo_cap */
  size_t memo_cap, memo_count;
  el_u64map sparse;    /* memo entries whose index is far beyond the dense part */
  uint64_t sparse_min; /* smallest key in sparse (UINT64_MAX if none) */
  el_u64map literal;   /* offset of a string literal's opcode -> interned string id */
  el_names names;
  uint64_t frame_end;
  int proto; /* protocol in force (last PROTO) */
  uint64_t op_off; /* the opcode being processed, for error messages */
  unsigned op;
  el_pickle_report r;
};

/* Address of stream byte x, which is in the window. */
static const uint8_t *at(const el_pv *v, uint64_t x) {
  return (const uint8_t *)(v->base + (uintptr_t)x);
}

/* ---- outcomes ----------------------------------------------------------------------------- */

COLD static step fail(el_pv *v, const char *fmt, ...) {
  el_pickle_report *r = &v->r;
  v->done = 1;
  if (!r->ok) return ST_ERR;
  r->ok = 0;
  r->offset = v->op_off;
  r->opcode = el_pickle_op_name(v->op);
  size_t k = 0;
  if (r->opcode) {
    el_fmt(r->message, sizeof r->message, "%s at offset %u: ", r->opcode, v->op_off);
    k = strlen(r->message);
  }
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(r->message + k, sizeof r->message - k, fmt, ap);
  va_end(ap);
  return ST_ERR;
}

COLD static step nomem(el_pv *v, const char *what) {
  fail(v, "out of memory while validating (%s)", what);
  v->r.nomem = 1;
  return ST_ERR;
}

/* Asks for a window starting at off holding at least len bytes (within the stream). */
COLD static step need(el_pv *v, uint64_t off, uint64_t len) {
  v->need_off = off;
  v->need_len = len < v->n - off ? len : v->n - off;
  if (!v->need_len) v->need_len = 1;
  return ST_NEED;
}

/* ---- arguments: each either in the window, past the end of the stream, or to be asked ---- */

/* The fixed-size argument [a, a+k) of the opcode at off. */
static const uint8_t *fixed(el_pv *v, uint64_t off, uint64_t a, uint64_t k, step *s) {
  if (a + k <= v->w_end) return at(v, a); /* the window never extends past the stream */
  if (v->n - a < k) {
    *s = fail(v, "argument needs %u bytes but only %u are left (truncated stream?)", k, v->n - a);
    return NULL;
  }
  *s = need(v, off, a + k - off);
  return NULL;
}

/* Whether len bytes of content starting at a are in the stream (not necessarily the window);
 * what names the argument in the error (an opcode's name when NULL). */
static int fits(el_pv *v, uint64_t a, uint64_t len, const char *what, step *s) {
  if (v->n - a >= len) return 1;
  if (!what) what = el_pickle_op_name(v->op);
  *s = fail(v, "%s length %u runs past the end of the stream (%u bytes left)", what, len, v->n - a);
  return 0;
}

/* The newline-terminated argument starting at a: [*start, *start + *len). */
static int line(el_pv *v, uint64_t off, uint64_t a, uint64_t *start, uint64_t *len, step *s) {
  const uint8_t *nl = a < v->w_end ? memchr(at(v, a), '\n', (size_t)(v->w_end - a)) : NULL;
  if (nl) {
    *start = a;
    *len = (uint64_t)(nl - at(v, a));
    return 1;
  }
  if (v->w_end >= v->n)
    *s = fail(v, "argument line has no terminating newline (truncated stream?)");
  else
    *s = need(v, off, 2 * (v->w_end - off) + 64); /* a longer window from the opcode */
  return 0;
}

/* ---- stack and marks ------------------------------------------------------------------------ */

static step push(el_pv *v, uint64_t val) {
  if (v->sp == v->scap && !el_grow((void **)&v->stack, &v->scap, v->sp + 1, sizeof *v->stack))
    return nomem(v, "stack");
  v->stack[v->sp++] = val;
  return ST_OK;
}

static step need_objs(el_pv *v, size_t k) {
  if (v->sp - v->fence >= k) return ST_OK;
  return fail(v, "needs %u objects on the stack but finds %u%s (stack underflow)", (uint64_t)k,
              (uint64_t)(v->sp - v->fence), v->nmarks ? " above the last MARK" : "");
}

/* Closes the innermost MARK: *count = objects above it. */
static step pop_mark(el_pv *v, size_t *count) {
  if (!v->nmarks) return fail(v, "there is no MARK to close (unbalanced marks)");
  *count = v->sp - v->fence;
  v->sp = v->fence;
  v->nmarks--;
  v->fence = v->nmarks ? v->marks[v->nmarks - 1] : 0;
  return ST_OK;
}

/* Replaces the top k objects by one new object. */
static step reduce(el_pv *v, size_t k) {
  step s = need_objs(v, k);
  if (s != ST_OK) return s;
  v->sp -= k - 1;
  v->stack[v->sp - 1] = V_OBJ;
  return ST_OK;
}

/* ---- memo ------------------------------------------------------------------------------------- */

static step memo_put(el_pv *v, uint64_t key, uint64_t val) {
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
    uint64_t *m = cap <= SIZE_MAX / sizeof *m ? realloc(v->memo, cap * sizeof *m) : NULL;
    if (!m) return nomem(v, "memo");
    v->memo = m;
    v->memo_cap = cap;
    memset(v->memo + old, 0xFF, (cap - old) * sizeof *v->memo);
    added = 1;
    v->memo[key] = val;
  } else if (el_map_put(&v->sparse, key, val, &added)) {
    if (key < v->sparse_min) v->sparse_min = key;
  } else {
    return nomem(v, "memo");
  }
  v->memo_count += (size_t)added;
  return ST_OK;
}

static uint64_t memo_get(const el_pv *v, uint64_t key) {
  if (key < v->memo_cap) return v->memo[key];
  return el_map_get(&v->sparse, key);
}

/* ---- string literals traced for STACK_GLOBAL --------------------------------------------------- */

/* Decodes the literal whose opcode is at off (in the window) into the report's arena and
 * interns it: *id. Asks for its bytes when the window does not hold them. */
static step resolve_literal(el_pv *v, uint64_t off, size_t *id) {
  if (off < v->w_off || off >= v->w_end) return need(v, off, 9);
  const uint8_t *p = at(v, off);
  uint64_t room = v->w_end - off, hdr = 0, len = 0;
  switch (p[0]) {
    case OP_SHORT_BINUNICODE: case OP_SHORT_BINSTRING: hdr = 2; break;
    case OP_BINUNICODE: case OP_BINSTRING: hdr = 5; break;
    case OP_BINUNICODE8: hdr = 9; break;
    case OP_UNICODE: hdr = 1; break;
    default: return fail(v, "the stream's bytes at offset %u changed while it was read", off);
  }
  if (room < hdr) return need(v, off, hdr);
  if (p[0] == OP_UNICODE) {
    const uint8_t *nl = memchr(p + 1, '\n', (size_t)(room - 1));
    if (!nl) return v->w_end >= v->n ? fail(v, "the stream's bytes at offset %u changed while it was read", off)
                                     : need(v, off, 2 * room + 64);
    len = (uint64_t)(nl - p - 1);
  } else {
    len = hdr == 2 ? p[1] : hdr == 5 ? el_ld32(p + 1) : el_ld64(p + 1);
    if (len > v->n - off - hdr)
      return fail(v, "the stream's bytes at offset %u changed while it was read", off);
    if (len > room - hdr) return need(v, off, hdr + len);
  }
  el_pickle_report *r = &v->r;
  size_t start = r->arena.len;
  const uint8_t *s = p + hdr;
  if (p[0] == OP_SHORT_BINSTRING || p[0] == OP_BINSTRING) {
    for (uint64_t i = 0; i < len; i++) el_buf_codepoint(&r->arena, s[i]); /* Latin-1 */
  } else if (p[0] == OP_UNICODE) {
    el_pk_raw_unicode_escape(s, (size_t)len, &r->arena);
  } else {
    el_buf_put(&r->arena, s, (size_t)len);
  }
  *id = el_intern_tail(&v->names, r, start);
  int added;
  if (*id == SIZE_MAX || !el_map_put(&v->literal, off, *id, &added)) return nomem(v, "globals");
  return ST_OK;
}

/* The interned id of a string value (a literal is decoded on first use). */
static step string_id(el_pv *v, uint64_t val, size_t *id) {
  if ((val & 3u) == TAG_INTERNED) {
    *id = (size_t)(val >> 2);
    return ST_OK;
  }
  uint64_t off = val >> 2, known = el_map_get(&v->literal, off);
  if (known != EL_MAP_NONE) {
    *id = (size_t)known;
    return ST_OK;
  }
  step s = resolve_literal(v, off, id);
  if (s == ST_NEED) v->fetch_off = off;
  return s;
}

/* Records an import; *val: the stack value of the object it gives. */
static step add_import(el_pv *v, size_t mid, size_t nid, unsigned op, int64_t ext, uint64_t *val) {
  size_t index = 0;
  int rc = el_add_import(&v->names, &v->r, mid, nid, op, v->proto, ext, &index);
  if (rc < 0) return fail(v, "too many distinct names (more than 2^32)");
  if (!rc) return nomem(v, "globals");
  *val = ((uint64_t)index << 2) | TAG_IMPORT;
  return ST_OK;
}

/* The object at stack[i] is called by an opcode (call: EL_CALL_*): if it is an import, the
 * import says so. */
static void note_call(el_pv *v, size_t i, unsigned call) {
  uint64_t val = v->stack[i];
  if ((val & 3u) == TAG_IMPORT) v->r.imports[val >> 2].calls |= call;
}

/* The frame check every opcode passes once complete. */
static step after_op(el_pv *v) {
  if (v->frame_end && v->pos > v->frame_end)
    return fail(v, "opcode runs past the end of its frame (frame ends at offset %u)", v->frame_end);
  return ST_OK;
}

/* ---- opcode families ---------------------------------------------------------------------------- */

/* NONE, NEWTRUE, NEWFALSE, EMPTY_LIST/TUPLE/DICT/SET, NEXT_BUFFER: no argument. */
FAMILY op_constant(el_pv *v, unsigned op, uint64_t off) {
  if (op == OP_NEXT_BUFFER) v->r.buffers_used++;
  v->pos = off + 1;
  return push(v, V_OBJ);
}

/* BININT1/2, BININT, BINFLOAT (fixed size); LONG1/LONG4 (opaque bytes); INT, LONG, FLOAT
 * (a decimal line). */
FAMILY op_number(el_pv *v, unsigned op, uint64_t off) {
  uint64_t a = off + 1, start, len;
  step s = ST_OK;
  const uint8_t *p;
  switch (op) {
    case OP_INT: case OP_LONG: case OP_FLOAT:
      if (!line(v, off, a, &start, &len, &s)) return s;
      p = at(v, start);
      if (op == OP_FLOAT ? !el_pk_check_float(p, (size_t)len)
                         : !el_pk_check_decimal(p, (size_t)len, op == OP_LONG))
        return fail(v, op == OP_FLOAT ? "argument is not a float literal"
                                      : "argument is not a decimal integer");
      v->pos = start + len + 1;
      break;
    case OP_LONG1:
      if (!(p = fixed(v, off, a, 1, &s)) || !fits(v, a + 1, p[0], "LONG1", &s)) return s;
      v->pos = a + 1 + p[0];
      break;
    case OP_LONG4: {
      if (!(p = fixed(v, off, a, 4, &s))) return s;
      int32_t l = (int32_t)el_ld32(p);
      if (l < 0) return fail(v, "negative byte count %d", (int64_t)l);
      if (!fits(v, a + 4, (uint64_t)l, "LONG4", &s)) return s;
      v->pos = a + 4 + (uint64_t)l;
      break;
    }
    default: { /* BININT1, BININT2, BININT, BINFLOAT */
      uint64_t k = op == OP_BININT1 ? 1 : op == OP_BININT2 ? 2 : op == OP_BININT ? 4 : 8;
      if (!fixed(v, off, a, k, &s)) return s;
      v->pos = a + k;
    }
  }
  return push(v, V_OBJ);
}

/* Length of a length-prefixed argument: the prefix is w bytes (BINSTRING and LONG4's is
 * signed). Returns 0 and sets *s when not available or invalid. */
static int prefixed(el_pv *v, unsigned op, uint64_t off, uint64_t w, int is_signed,
                    uint64_t *len, step *s) {
  const uint8_t *p = fixed(v, off, off + 1, w, s);
  if (!p) return 0;
  if (is_signed && (int32_t)el_ld32(p) < 0) {
    *s = fail(v, "negative byte count %d", (int64_t)(int32_t)el_ld32(p));
    return 0;
  }
  *len = w == 1 ? p[0] : w == 2 ? el_ld16(p) : w == 4 ? el_ld32(p) : el_ld64(p);
  (void)op; /* v->op: fits names it on error */
  return fits(v, off + 1 + w, *len, NULL, s);
}

/* SHORT_BINBYTES, BINBYTES, BINBYTES8, BYTEARRAY8: opaque content, skipped unread (the
 * record's content CRC covers it). */
FAMILY op_bytes(el_pv *v, unsigned op, uint64_t off) {
  uint64_t w = op == OP_SHORT_BINBYTES ? 1 : op == OP_BINBYTES ? 4 : 8, len;
  step s = ST_OK;
  if (!prefixed(v, op, off, w, 0, &len, &s)) return s;
  v->pos = off + 1 + w + len;
  return push(v, V_OBJ);
}

/* Checks UTF-8 of a long string's content [pos, content_end) window by window; a sequence cut
 * by the window's end is read again from its first byte in the next window. */
static step utf8_content(el_pv *v) {
  while (v->pos < v->content_end) {
    if (v->pos < v->w_off || v->pos >= v->w_end) return need(v, v->pos, v->content_end - v->pos);
    uint64_t end = v->w_end < v->content_end ? v->w_end : v->content_end;
    size_t avail = (size_t)(end - v->pos);
    size_t ok = el_utf8_valid_prefix(at(v, v->pos), avail, 1);
    v->pos += ok;
    if (ok == avail) continue;
    if (end < v->content_end && avail - ok < 4) return need(v, v->pos, v->content_end - v->pos);
    return fail(v, "string is not valid UTF-8 (bad byte at offset %u)", v->pos);
  }
  v->mode = M_OPS;
  return push(v, (v->op_off << 2) | TAG_LITERAL);
}

/* SHORT_BINUNICODE, BINUNICODE, BINUNICODE8 (UTF-8, checked); SHORT_BINSTRING, BINSTRING
 * (Python 2 str, opaque); UNICODE (raw-unicode-escape line); STRING (a quoted repr line).
 * All but STRING keep their offset, so STACK_GLOBAL can trace them. */
FAMILY op_string(el_pv *v, unsigned op, uint64_t off) {
  uint64_t len, start;
  step s = ST_OK;
  switch (op) {
    case OP_SHORT_BINUNICODE: case OP_BINUNICODE: case OP_BINUNICODE8: {
      uint64_t w = op == OP_SHORT_BINUNICODE ? 1 : op == OP_BINUNICODE ? 4 : 8;
      if (!prefixed(v, op, off, w, 0, &len, &s)) return s;
      uint64_t c = off + 1 + w;
      if (c + len <= v->w_end) { /* in the window: ASCII is the common case, no decoding */
        const uint8_t *p = at(v, c);
        uint8_t any = 0;
        for (uint64_t i = 0; i < len; i++) any |= p[i];
        size_t ok = any & 0x80 ? el_utf8_valid_prefix(p, (size_t)len, 1) : (size_t)len;
        if (ok != len) return fail(v, "string is not valid UTF-8 (bad byte at offset %u)", c + ok);
        v->pos = c + len;
        return push(v, (off << 2) | TAG_LITERAL);
      }
      v->mode = M_UTF8;
      v->pos = c;
      v->content_end = c + len;
      return utf8_content(v);
    }
    case OP_SHORT_BINSTRING: case OP_BINSTRING: {
      uint64_t w = op == OP_SHORT_BINSTRING ? 1 : 4;
      if (!prefixed(v, op, off, w, op == OP_BINSTRING, &len, &s)) return s;
      v->pos = off + 1 + w + len;
      return push(v, (off << 2) | TAG_LITERAL);
    }
    case OP_UNICODE:
      if (!line(v, off, off + 1, &start, &len, &s)) return s;
      if (!el_pk_raw_unicode_escape(at(v, start), (size_t)len, NULL))
        return fail(v, "argument has a bad \\u or \\U escape");
      v->pos = start + len + 1;
      return push(v, (off << 2) | TAG_LITERAL);
    default: /* OP_STRING: not traced: no pickler uses it for STACK_GLOBAL operands */
      if (!line(v, off, off + 1, &start, &len, &s)) return s;
      if (!el_pk_check_string_repr(at(v, start), (size_t)len))
        return fail(v, "argument is not a quoted string with valid escapes");
      v->pos = start + len + 1;
      return push(v, V_OBJ);
  }
}

/* APPEND, SETITEM, TUPLE1/2/3 (top objects); LIST, TUPLE, FROZENSET, DICT, APPENDS,
 * SETITEMS, ADDITEMS (everything above the last MARK). */
FAMILY op_container(el_pv *v, unsigned op, uint64_t off) {
  size_t cnt = 0;
  step s;
  v->pos = off + 1;
  switch (op) {
    case OP_APPEND: if ((s = need_objs(v, 2)) == ST_OK) v->sp -= 1; return s;
    case OP_SETITEM: if ((s = need_objs(v, 3)) == ST_OK) v->sp -= 2; return s;
    case OP_TUPLE1: return reduce(v, 1);
    case OP_TUPLE2: return reduce(v, 2);
    case OP_TUPLE3: return reduce(v, 3);
    case OP_LIST: case OP_TUPLE: case OP_FROZENSET: case OP_DICT:
      if ((s = pop_mark(v, &cnt)) != ST_OK) return s;
      if (op == OP_DICT && (cnt & 1)) return fail(v, "odd number of items (%u) for DICT", (uint64_t)cnt);
      return push(v, V_OBJ);
    default: /* APPENDS, SETITEMS, ADDITEMS */
      if ((s = pop_mark(v, &cnt)) != ST_OK) return s;
      if (op == OP_SETITEMS && (cnt & 1))
        return fail(v, "odd number of items (%u) for SETITEMS", (uint64_t)cnt);
      if (v->sp == v->fence) return fail(v, "no container below the MARK to add items to (stack underflow)");
      return ST_OK;
  }
}

/* MARK, POP, POP_MARK, DUP. */
FAMILY op_stack(el_pv *v, unsigned op, uint64_t off) {
  size_t cnt = 0;
  v->pos = off + 1;
  switch (op) {
    case OP_MARK:
      if (v->nmarks == v->mcap && !el_grow((void **)&v->marks, &v->mcap, v->nmarks + 1, sizeof(size_t)))
        return nomem(v, "marks");
      v->marks[v->nmarks++] = v->fence = v->sp;
      return ST_OK;
    case OP_POP:
      if (v->sp > v->fence) {
        v->sp--;
        return ST_OK;
      }
      if (v->nmarks) return pop_mark(v, &cnt); /* as CPython does: POP on a mark drops it */
      return fail(v, "stack is empty (stack underflow)");
    case OP_POP_MARK: return pop_mark(v, &cnt);
    default: { /* DUP */
      step s = need_objs(v, 1);
      return s == ST_OK ? push(v, v->stack[v->sp - 1]) : s;
    }
  }
}

/* PUT, BINPUT, LONG_BINPUT, MEMOIZE; GET, BINGET, LONG_BINGET. */
FAMILY op_memo(el_pv *v, unsigned op, uint64_t off) {
  uint64_t a = off + 1, key = 0, start, len;
  step s = ST_OK;
  const uint8_t *p;
  int is_get = op == OP_GET || op == OP_BINGET || op == OP_LONG_BINGET;
  if (op == OP_PUT || op == OP_GET) {
    if (!line(v, off, a, &start, &len, &s)) return s;
    if (!el_pk_parse_index(at(v, start), (size_t)len, &key))
      return fail(v, "argument is not a memo index (0 to 2^63-1)");
    v->pos = start + len + 1;
  } else if (op == OP_BINPUT || op == OP_BINGET) {
    if (!(p = fixed(v, off, a, 1, &s))) return s;
    key = p[0];
    v->pos = a + 1;
  } else if (op == OP_LONG_BINPUT || op == OP_LONG_BINGET) {
    if (!(p = fixed(v, off, a, 4, &s))) return s;
    key = el_ld32(p);
    v->pos = a + 4;
  } else { /* MEMOIZE */
    key = v->memo_count;
    v->pos = a;
  }
  if (is_get) {
    uint64_t val = memo_get(v, key);
    if (val == MEMO_EMPTY) return fail(v, "memo has no entry %u", key);
    return push(v, val);
  }
  if ((s = need_objs(v, 1)) != ST_OK) return s;
  return memo_put(v, key, v->stack[v->sp - 1]);
}

/* GLOBAL, INST (module and name on two lines); STACK_GLOBAL (two strings from the stack);
 * EXT1/2/4 (a code of copyreg's extension registry). Each import is recorded. */
FAMILY op_global(el_pv *v, unsigned op, uint64_t off) {
  step s = ST_OK;
  if (op == OP_GLOBAL || op == OP_INST) {
    uint64_t ma, ml, na, nl;
    if (!line(v, off, off + 1, &ma, &ml, &s) || !line(v, off, ma + ml + 1, &na, &nl, &s)) return s;
    const uint8_t *m = at(v, ma), *n = at(v, na);
    if (!ml || !nl) return fail(v, "module or name is empty");
    if (el_utf8_valid_prefix(m, (size_t)ml, 0) != ml || el_utf8_valid_prefix(n, (size_t)nl, 0) != nl)
      return fail(v, "module or name is not valid UTF-8");
    size_t mid = el_intern(&v->names, &v->r, m, (size_t)ml);
    size_t nid = el_intern(&v->names, &v->r, n, (size_t)nl);
    uint64_t val = V_OBJ;
    if ((s = add_import(v, mid, nid, op, 0, &val)) != ST_OK) return s;
    v->pos = na + nl + 1;
    if (op == OP_GLOBAL) return push(v, val);
    size_t cnt;
    v->r.imports[val >> 2].calls |= EL_CALL_INST;
    if ((s = pop_mark(v, &cnt)) != ST_OK) return s;
    return push(v, V_OBJ);
  }
  if (op == OP_STACK_GLOBAL) {
    if ((s = need_objs(v, 2)) != ST_OK) return s;
    uint64_t mv = v->stack[v->sp - 2], nv = v->stack[v->sp - 1];
    if (!IS_STRING(mv) || !IS_STRING(nv))
      return fail(v, "module and name are not string literals (they would be computed while "
                     "loading), so what this imports cannot be known before running it");
    size_t mid, nid;
    if ((s = string_id(v, mv, &mid)) != ST_OK || (s = string_id(v, nv, &nid)) != ST_OK) return s;
    uint64_t val = V_OBJ;
    if ((s = add_import(v, mid, nid, op, 0, &val)) != ST_OK) return s;
    v->pos = off + 1;
    v->sp -= 1;
    v->stack[v->sp - 1] = val;
    return ST_OK;
  }
  uint64_t w = op == OP_EXT1 ? 1 : op == OP_EXT2 ? 2 : 4;
  const uint8_t *p = fixed(v, off, off + 1, w, &s);
  if (!p) return s;
  int64_t code = w == 1 ? p[0] : w == 2 ? el_ld16(p) : (int32_t)el_ld32(p);
  if (code <= 0) return fail(v, "extension code %d is not positive", code);
  /* which global the code names is decided by the loading interpreter's registry: reported
   * as an unresolved import (ext), with the registry as its placeholder name */
  static const char registry[] = "copyreg._extension_registry";
  size_t mid = el_intern(&v->names, &v->r, (const uint8_t *)registry, sizeof registry - 1);
  size_t n0 = v->r.arena.len;
  el_buf_u64(&v->r.arena, (uint64_t)code);
  uint64_t val = V_OBJ;
  if ((s = add_import(v, mid, el_intern_tail(&v->names, &v->r, n0), op, code, &val)) != ST_OK)
    return s;
  v->pos = off + 1 + w;
  return push(v, val);
}

/* REDUCE, BUILD, NEWOBJ, NEWOBJ_EX, OBJ (calls and state); PERSID, BINPERSID (persistent
 * ids); READONLY_BUFFER. */
FAMILY op_build(el_pv *v, unsigned op, uint64_t off) {
  uint64_t start, len;
  size_t cnt = 0;
  step s = ST_OK;
  switch (op) {
    case OP_PERSID:
      if (!line(v, off, off + 1, &start, &len, &s)) return s;
      for (uint64_t i = 0; i < len; i++)
        if (at(v, start)[i] & 0x80) return fail(v, "persistent id is not ASCII");
      v->pos = start + len + 1;
      return push(v, V_OBJ);
    case OP_OBJ: {
      v->pos = off + 1;
      size_t cls = v->fence; /* the first object after the MARK */
      if ((s = pop_mark(v, &cnt)) != ST_OK) return s;
      if (cnt < 1) return fail(v, "needs a class after the MARK (stack underflow)");
      note_call(v, cls, EL_CALL_OBJ);
      return push(v, V_OBJ);
    }
    case OP_NEWOBJ_EX:
      v->pos = off + 1;
      if ((s = need_objs(v, 3)) == ST_OK) note_call(v, v->sp - 3, EL_CALL_NEWOBJ_EX);
      return s == ST_OK ? reduce(v, 3) : s;
    case OP_BINPERSID: case OP_READONLY_BUFFER: v->pos = off + 1; return reduce(v, 1);
    case OP_REDUCE: case OP_NEWOBJ:
      v->pos = off + 1;
      if ((s = need_objs(v, 2)) == ST_OK)
        note_call(v, v->sp - 2, op == OP_REDUCE ? EL_CALL_REDUCE : EL_CALL_NEWOBJ);
      return s == ST_OK ? reduce(v, 2) : s;
    default: v->pos = off + 1; return reduce(v, 2); /* BUILD */
  }
}

/* PROTO, FRAME, STOP. */
FAMILY op_framing(el_pv *v, unsigned op, uint64_t off) {
  step s = ST_OK;
  const uint8_t *p;
  if (op == OP_PROTO) {
    if (!(p = fixed(v, off, off + 1, 1, &s))) return s;
    if (p[0] > HIGHEST_PROTOCOL)
      return fail(v, "unsupported pickle protocol %u (this validator knows 0 to 5)", (uint64_t)p[0]);
    v->proto = p[0];
    if (p[0] > v->r.protocol) v->r.protocol = p[0];
    v->pos = off + 2;
    return ST_OK;
  }
  if (op == OP_FRAME) {
    if (!(p = fixed(v, off, off + 1, 8, &s))) return s;
    uint64_t len = el_ld64(p);
    if (v->frame_end)
      return fail(v, "a new frame starts before the current frame ends (at offset %u)", v->frame_end);
    if (!fits(v, off + 9, len, "frame", &s)) return s;
    v->frame_end = off + 9 + len;
    v->pos = off + 9;
    return ST_OK;
  }
  /* STOP */
  if ((s = need_objs(v, 1)) != ST_OK) return s;
  v->sp -= 1;
  if (v->sp || v->nmarks)
    return fail(v, "stack is not empty at STOP (%u objects and %u MARKs left)", (uint64_t)v->sp,
                (uint64_t)v->nmarks);
  v->pos = off + 1;
  if ((s = after_op(v)) != ST_OK) return s;
  if (v->pos != v->n) {
    v->op_off = v->pos;
    v->op = NO_OPCODE;
    return fail(v, "%u bytes of data after STOP at offset %u (only one pickle per stream)",
                v->n - v->pos, v->pos - 1);
  }
  v->done = 1;
  return ST_DONE;
}

static step dispatch(el_pv *v, unsigned op, uint64_t off) {
  switch (op) {
    case OP_NONE: case OP_NEWTRUE: case OP_NEWFALSE: case OP_EMPTY_LIST: case OP_EMPTY_TUPLE:
    case OP_EMPTY_DICT: case OP_EMPTY_SET: case OP_NEXT_BUFFER:
      return op_constant(v, op, off);
    case OP_BININT1: case OP_BININT2: case OP_BININT: case OP_BINFLOAT: case OP_LONG1:
    case OP_LONG4: case OP_INT: case OP_LONG: case OP_FLOAT:
      return op_number(v, op, off);
    case OP_SHORT_BINBYTES: case OP_BINBYTES: case OP_BINBYTES8: case OP_BYTEARRAY8:
      return op_bytes(v, op, off);
    case OP_SHORT_BINUNICODE: case OP_BINUNICODE: case OP_BINUNICODE8: case OP_SHORT_BINSTRING:
    case OP_BINSTRING: case OP_UNICODE: case OP_STRING:
      return op_string(v, op, off);
    case OP_APPEND: case OP_SETITEM: case OP_TUPLE1: case OP_TUPLE2: case OP_TUPLE3:
    case OP_LIST: case OP_TUPLE: case OP_FROZENSET: case OP_DICT: case OP_APPENDS:
    case OP_SETITEMS: case OP_ADDITEMS:
      return op_container(v, op, off);
    case OP_MARK: case OP_POP: case OP_POP_MARK: case OP_DUP:
      return op_stack(v, op, off);
    case OP_PUT: case OP_BINPUT: case OP_LONG_BINPUT: case OP_MEMOIZE: case OP_GET:
    case OP_BINGET: case OP_LONG_BINGET:
      return op_memo(v, op, off);
    case OP_GLOBAL: case OP_INST: case OP_STACK_GLOBAL: case OP_EXT1: case OP_EXT2: case OP_EXT4:
      return op_global(v, op, off);
    case OP_REDUCE: case OP_BUILD: case OP_NEWOBJ: case OP_NEWOBJ_EX: case OP_OBJ:
    case OP_PERSID: case OP_BINPERSID: case OP_READONLY_BUFFER:
      return op_build(v, op, off);
    case OP_PROTO: case OP_FRAME: case OP_STOP:
      return op_framing(v, op, off);
    default: {
      char hx[5] = {'0', 'x', "0123456789abcdef"[op >> 4], "0123456789abcdef"[op & 15], 0};
      return fail(v, "unknown opcode %s at offset %u (not a pickle, or a corrupted one)", hx, off);
    }
  }
}

/* ---- the walk ------------------------------------------------------------------------------- */

static step next_opcode(el_pv *v) {
  uint64_t off = v->pos;
  if (off - v->w_off >= v->w_end - v->w_off) { /* not in the window (also when off < w_off) */
    if (off < v->n) return need(v, off, 1);
    v->op_off = v->n;
    v->op = NO_OPCODE;
    return fail(v, "stream ends at offset %u without STOP (truncated stream?)", v->n);
  }
  unsigned op = *at(v, off);
  v->op_off = off;
  v->op = op;
  if (v->frame_end && off >= v->frame_end) v->frame_end = 0;
  step s = dispatch(v, op, off);
  return s == ST_OK && v->mode == M_OPS ? after_op(v) : s;
}

el_pv *el_pv_new(uint64_t stream_len) {
  el_pv *v = calloc(1, sizeof *v);
  if (!v) return NULL;
  v->n = stream_len;
  v->r.ok = 1;
  v->sparse_min = UINT64_MAX;
  v->fetch_off = EL_MAP_NONE;
  v->op = NO_OPCODE;
  v->need_len = 1;
  return v;
}

int el_pv_feed(el_pv *v, uint64_t off, const uint8_t *p, size_t n) {
  if (v->done) return EL_PV_DONE;
  if (!v->n) {
    fail(v, "empty stream: there is no pickle data (expected at least one opcode and STOP)");
    return EL_PV_DONE;
  }
  v->w = p;
  v->w_off = off;
  v->w_end = p && off <= v->n ? off + (n < v->n - off ? n : v->n - off) : off;
  v->base = (uintptr_t)p - (uintptr_t)off;
  step s = ST_OK;
  if (v->fetch_off != EL_MAP_NONE) { /* a literal STACK_GLOBAL waits for */
    size_t id;
    if ((s = resolve_literal(v, v->fetch_off, &id)) == ST_OK) v->fetch_off = EL_MAP_NONE;
  }
  if (s == ST_OK && v->mode == M_UTF8 && (s = utf8_content(v)) == ST_OK)
    s = after_op(v); /* the string opcode is complete now */
  while (s == ST_OK) s = next_opcode(v);
  return s == ST_NEED ? EL_PV_NEED : EL_PV_DONE;
}

void el_pv_need(const el_pv *v, uint64_t *off, uint64_t *len) {
  *off = v->need_off;
  *len = v->need_len;
}

el_pickle_report *el_pv_report(el_pv *v) { return &v->r; }
uint64_t el_pv_stream_length(const el_pv *v) { return v->n; }

void el_pv_free(el_pv *v) {
  if (!v) return;
  free(v->stack);
  free(v->marks);
  free(v->memo);
  el_map_free(&v->sparse);
  el_map_free(&v->literal);
  el_names_free(&v->names);
  el_pickle_report_free(&v->r);
  free(v);
}

void el_pickle_report_free(el_pickle_report *r) {
  el_buf_free(&r->arena);
  free(r->soff);
  free(r->slen);
  free(r->gpair);
  free(r->imports);
  r->soff = r->slen = r->gpair = NULL;
  r->imports = NULL;
  r->nstrings = r->scap = r->nglobals = r->gcap = r->nimports = r->icap = 0;
}

/* The whole stream as one window: nothing is ever asked for. */
void el_pickle_validate(const uint8_t *p, size_t n, el_pickle_report *r) {
  el_pv *v = el_pv_new(n);
  memset(r, 0, sizeof *r);
  if (!v) {
    el_fmt(r->message, sizeof r->message, "out of memory while validating (state)");
    r->nomem = 1;
    return;
  }
  if (!p && n) {
    fail(v, "no data (NULL pointer)");
  } else if (el_pv_feed(v, 0, p, n) != EL_PV_DONE) {
    fail(v, "internal error: the validator asked for bytes it was given");
  }
  if (v->r.arena.failed && v->r.ok) nomem(v, "globals");
  *r = v->r;
  memset(&v->r, 0, sizeof v->r);
  el_pv_free(v);
}

static void put_string(el_buf *b, const el_pickle_report *r, size_t id) {
  el_buf_json_str(b, (const uint8_t *)r->arena.data + r->soff[id], r->slen[id]);
}

/* Each dotted prefix of a name: "a.b.c" -> "a", "a.b", "a.b.c" (what pickle resolves, one
 * getattr after the other, at protocol 4 and later). */
static void put_prefixes(el_buf *b, const el_pickle_report *r, size_t id) {
  const uint8_t *s = (const uint8_t *)r->arena.data + r->soff[id];
  size_t n = r->slen[id];
  el_buf_put(b, "[", 1);
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '.') continue;
    if (i < n) {
      el_buf_json_str(b, s, i);
      el_buf_put(b, ",", 1);
    } else {
      el_buf_json_str(b, s, n);
    }
  }
  el_buf_put(b, "]", 1);
}

void el_pickle_imports_json(el_buf *b, const el_pickle_report *r) {
  static const struct {
    unsigned bit;
    const char *name;
  } calls[] = {{EL_CALL_REDUCE, "REDUCE"}, {EL_CALL_NEWOBJ, "NEWOBJ"},
               {EL_CALL_NEWOBJ_EX, "NEWOBJ_EX"}, {EL_CALL_OBJ, "OBJ"}, {EL_CALL_INST, "INST"}};
  el_buf_put(b, "[", 1);
  for (size_t i = 0; i < r->nimports; i++) {
    const el_import *m = &r->imports[i];
    el_buf_puts(b, i ? ",{" : "{");
    if (m->ext) {
      el_buf_puts(b, "\"module\":null,\"name\":null,\"prefixes\":[],\"ext\":");
      el_buf_i64(b, m->ext);
    } else {
      el_buf_puts(b, "\"module\":");
      put_string(b, r, m->module);
      el_buf_puts(b, ",\"name\":");
      put_string(b, r, m->name);
      el_buf_puts(b, ",\"prefixes\":");
      put_prefixes(b, r, m->name);
      el_buf_puts(b, ",\"ext\":null");
    }
    el_buf_puts(b, ",\"opcode\":");
    el_buf_json_cstr(b, el_pickle_op_name(m->opcode));
    el_buf_puts(b, ",\"protocol\":");
    el_buf_u64(b, (uint64_t)m->proto);
    el_buf_puts(b, ",\"calls\":[");
    for (size_t k = 0, first = 1; k < sizeof calls / sizeof *calls; k++) {
      if (!(m->calls & calls[k].bit)) continue;
      if (!first) el_buf_put(b, ",", 1);
      el_buf_json_cstr(b, calls[k].name);
      first = 0;
    }
    el_buf_puts(b, "]}");
  }
  el_buf_put(b, "]", 1);
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
