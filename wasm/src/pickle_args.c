/* Syntax of pickle opcode arguments, checked without running anything: what CPython's
 * unpickler would accept for INT/LONG/FLOAT lines, STRING reprs, UNICODE escapes, memo
 * indices. */
#include "pickle.h"

static int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }
static int hexval(uint8_t c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* [+-]?[0-9]+ followed by an optional 'L' when allow_l. */
int el_pk_check_decimal(const uint8_t *s, size_t n, int allow_l) {
  size_t i = 0;
  if (allow_l && n && s[n - 1] == 'L') n--;
  if (i < n && (s[i] == '+' || s[i] == '-')) i++;
  if (i == n) return 0;
  for (; i < n; i++)
    if (!is_digit(s[i])) return 0;
  return 1;
}

/* Unsigned decimal memo index; 0 if malformed or above 2^63-1. */
int el_pk_parse_index(const uint8_t *s, size_t n, uint64_t *out) {
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
int el_pk_check_float(const uint8_t *s, size_t n) {
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
int el_pk_check_string_repr(const uint8_t *s, size_t n) {
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
int el_pk_raw_unicode_escape(const uint8_t *s, size_t n, el_buf *out) {
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
