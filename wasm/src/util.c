/* Formatting, text buffers, JSON string escaping and UTF-8 checks. Kept free of stdio so the
 * WebAssembly build needs no imports. */
#include <stdlib.h>

#include "internal.h"

static char last_error[EL_ERRMSG];

/* EL_VERSION: package.json's version, defined by CMakeLists.txt. */
const char *el_version(void) { return EL_VERSION; }
const char *el_last_error(void) { return last_error; }

void *el_malloc(size_t n) { return malloc(n ? n : 1); }
void el_free(void *p) { free(p); }

static size_t put_u64(char *tmp, uint64_t v) { /* writes reversed digits, returns count */
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + (v % 10));
    v /= 10;
  } while (v);
  return n;
}

void el_vfmt(char *dst, size_t cap, const char *fmt, va_list ap) {
  size_t o = 0;
  if (cap == 0) return;
#define PUTC(c)                        \
  do {                                 \
    if (o + 1 < cap) dst[o++] = (c);   \
  } while (0)
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') {
      PUTC(*f);
      continue;
    }
    f++;
    char tmp[24];
    size_t k;
    switch (*f) {
      case 's': {
        const char *s = va_arg(ap, const char *);
        if (!s) s = "(null)";
        while (*s) PUTC(*s++);
        break;
      }
      case 'u':
        k = put_u64(tmp, va_arg(ap, uint64_t));
        while (k) PUTC(tmp[--k]);
        break;
      case 'd': {
        int64_t v = va_arg(ap, int64_t);
        uint64_t m = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
        if (v < 0) PUTC('-');
        k = put_u64(tmp, m);
        while (k) PUTC(tmp[--k]);
        break;
      }
      case 'x': {
        uint32_t v = va_arg(ap, uint32_t);
        for (int i = 7; i >= 0; i--) PUTC("0123456789abcdef"[(v >> (4 * i)) & 15]);
        break;
      }
      case '%':
        PUTC('%');
        break;
      default: /* unknown conversion: stop rather than misread varargs */
        dst[o] = 0;
        return;
    }
    if (!*f) break;
  }
#undef PUTC
  dst[o] = 0;
}

void el_fmt(char *dst, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(dst, cap, fmt, ap);
  va_end(ap);
}

int el_grow(void **arr, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2 / elem) return 0;
    c *= 2;
  }
  void *a = realloc(*arr, c * elem);
  if (!a) return 0;
  *arr = a;
  *cap = c;
  return 1;
}

void el_set_last_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}

/* ---- text buffer ---------------------------------------------------------------------- */

static int buf_grow(el_buf *b, size_t extra) {
  if (b->failed) return 0;
  if (b->cap - b->len > extra) return 1; /* keep one byte for the final NUL */
  if (extra > SIZE_MAX / 2 - b->len) {
    b->failed = 1;
    return 0;
  }
  size_t need = b->len + extra + 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < need) cap *= 2;
  char *d = realloc(b->data, cap);
  if (!d) {
    b->failed = 1;
    return 0;
  }
  b->data = d;
  b->cap = cap;
  return 1;
}

void el_buf_put(el_buf *b, const void *p, size_t n) {
  if (!buf_grow(b, n)) return;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
}

void el_buf_puts(el_buf *b, const char *s) { el_buf_put(b, s, strlen(s)); }

void el_buf_u64(el_buf *b, uint64_t v) {
  char tmp[24], out[24];
  size_t k = put_u64(tmp, v), n = 0;
  while (k) out[n++] = tmp[--k];
  el_buf_put(b, out, n);
}

void el_buf_i64(el_buf *b, int64_t v) {
  if (v < 0) {
    el_buf_put(b, "-", 1);
    el_buf_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    el_buf_u64(b, (uint64_t)v);
  }
}

void el_buf_hex32(el_buf *b, uint32_t v) {
  char out[8];
  for (int i = 0; i < 8; i++) out[i] = "0123456789abcdef"[(v >> (4 * (7 - i))) & 15];
  el_buf_put(b, out, 8);
}

void el_buf_free(el_buf *b) {
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

void el_buf_codepoint(el_buf *b, uint32_t cp) {
  uint8_t o[4];
  size_t n;
  if (cp < 0x80) {
    o[0] = (uint8_t)cp;
    n = 1;
  } else if (cp < 0x800) {
    o[0] = (uint8_t)(0xC0 | (cp >> 6));
    o[1] = (uint8_t)(0x80 | (cp & 63));
    n = 2;
  } else if (cp < 0x10000) {
    o[0] = (uint8_t)(0xE0 | (cp >> 12));
    o[1] = (uint8_t)(0x80 | ((cp >> 6) & 63));
    o[2] = (uint8_t)(0x80 | (cp & 63));
    n = 3;
  } else {
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 63));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 63));
    o[3] = (uint8_t)(0x80 | (cp & 63));
    n = 4;
  }
  el_buf_put(b, o, n);
}

/* ---- UTF-8 ---------------------------------------------------------------------------- */

/* Decodes one sequence at s[0..n); returns its length (0 if malformed) and the code point.
 * Surrogates are decoded (callers decide whether they are acceptable). */
static size_t utf8_one(const uint8_t *s, size_t n, uint32_t *cp) {
  uint8_t c = s[0];
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  if (c >= 0xC2 && c <= 0xDF) {
    if (n < 2 || (s[1] & 0xC0) != 0x80) return 0;
    *cp = ((uint32_t)(c & 0x1F) << 6) | (s[1] & 0x3F);
    return 2;
  }
  if (c >= 0xE0 && c <= 0xEF) {
    if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
    uint32_t v = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F);
    if (v < 0x800) return 0; /* overlong */
    *cp = v;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80)
      return 0;
    uint32_t v = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) |
                 ((uint32_t)(s[2] & 0x3F) << 6) | (s[3] & 0x3F);
    if (v < 0x10000 || v > 0x10FFFF) return 0;
    *cp = v;
    return 4;
  }
  return 0;
}

size_t el_utf8_valid_prefix(const uint8_t *s, size_t n, int allow_surrogates) {
  size_t i = 0;
  while (i < n) {
    /* ASCII fast path, 8 bytes at a time: most names and keys are ASCII */
    while (n - i >= 8) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    uint32_t cp;
    size_t k = utf8_one(s + i, n - i, &cp);
    if (!k) return i;
    if (!allow_surrogates && cp >= 0xD800 && cp <= 0xDFFF) return i;
    i += k;
  }
  return n;
}

void el_buf_json_str(el_buf *b, const uint8_t *s, size_t n) {
  el_buf_put(b, "\"", 1);
  size_t i = 0;
  while (i < n) {
    size_t run = i; /* copy plain ASCII runs in one go */
    while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\') run++;
    if (run > i) {
      el_buf_put(b, s + i, run - i);
      i = run;
      continue;
    }
    uint8_t c = s[i];
    if (c < 0x80) {
      char e[7] = {'\\', 'u', '0', '0', 0, 0, 0};
      switch (c) {
        case '"': el_buf_put(b, "\\\"", 2); break;
        case '\\': el_buf_put(b, "\\\\", 2); break;
        case '\n': el_buf_put(b, "\\n", 2); break;
        case '\r': el_buf_put(b, "\\r", 2); break;
        case '\t': el_buf_put(b, "\\t", 2); break;
        default:
          e[4] = "0123456789abcdef"[c >> 4];
          e[5] = "0123456789abcdef"[c & 15];
          el_buf_put(b, e, 6);
      }
      i++;
      continue;
    }
    uint32_t cp;
    size_t k = utf8_one(s + i, n - i, &cp);
    if (!k) {
      el_buf_put(b, "\xEF\xBF\xBD", 3); /* U+FFFD for a byte that is not UTF-8 */
      i++;
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      char e[6] = {'\\', 'u', 0, 0, 0, 0};
      for (int j = 0; j < 4; j++) e[2 + j] = "0123456789abcdef"[(cp >> (4 * (3 - j))) & 15];
      el_buf_put(b, e, 6);
      i += k;
    } else {
      el_buf_put(b, s + i, k);
      i += k;
    }
  }
  el_buf_put(b, "\"", 1);
}

void el_buf_json_cstr(el_buf *b, const char *s) {
  el_buf_json_str(b, (const uint8_t *)s, strlen(s));
}

void el_error_json(el_buf *b, const char *code, const char *message, uint64_t offset,
                   int64_t record, const char *opcode) {
  el_buf_puts(b, "{\"code\":");
  el_buf_json_cstr(b, code ? code : EL_CODE_STRUCTURE);
  el_buf_puts(b, ",\"message\":");
  el_buf_json_cstr(b, message);
  el_buf_puts(b, ",\"offset\":");
  el_buf_u64(b, offset);
  el_buf_puts(b, ",\"record\":");
  if (record < 0)
    el_buf_puts(b, "null");
  else
    el_buf_i64(b, record);
  el_buf_puts(b, ",\"opcode\":");
  if (opcode)
    el_buf_json_cstr(b, opcode);
  else
    el_buf_puts(b, "null");
  el_buf_puts(b, "}");
}
