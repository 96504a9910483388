/* Hostile and broken pickle streams: each gets a clear error naming the problem, its offset
 * and opcode, and nothing else (no crash, no huge allocation, no deep recursion). */
#include <stdint.h>

#include "check.h"

static char *validate(const void *p, size_t n, int *ok) {
  el_result *r = el_validate_pickle((const uint8_t *)p, n);
  CHECK(r);
  if (!r) return strdup("");
  *ok = el_result_ok(r);
  char *s = strdup(el_result_json(r));
  el_result_free(r);
  return s;
}

#define BAD(bytes, ...)                                         \
  do {                                                          \
    int ok_ = 1;                                                \
    char *j_ = validate(bytes, sizeof(bytes) - 1, &ok_);        \
    CHECK(!ok_);                                                \
    const char *want_[] = {__VA_ARGS__};                        \
    for (size_t i_ = 0; i_ < sizeof want_ / sizeof *want_; i_++) \
      CHECK_CONTAINS(j_, want_[i_]);                            \
    free(j_);                                                   \
  } while (0)
#define GOOD(bytes, globals)                                    \
  do {                                                          \
    int ok_ = 0;                                                \
    char *j_ = validate(bytes, sizeof(bytes) - 1, &ok_);        \
    if (!ok_) fprintf(stderr, "unexpectedly rejected: %s\n", j_); \
    CHECK(ok_);                                                 \
    CHECK_CONTAINS(j_, globals);                                \
    free(j_);                                                   \
  } while (0)

static void truncated_and_lengths(void) {
  BAD("", "empty stream");
  BAD("\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01" "a\x94K\x01s",
      "\"opcode\":\"FRAME\"", "frame length 10 runs past the end of the stream (9 bytes left)");
  BAD("\x80\x04\x95\x01\x00", "FRAME at offset 2: argument needs 8 bytes but only 2 are left");
  BAD("N", "stream ends at offset 1 without STOP");
  BAD("\x80\x04\x8e\x00\x00\x00\x00\x00\x00\x00\x80.",
      "BINBYTES8 at offset 2: BINBYTES8 length 9223372036854775808 runs past the end",
      "\"offset\":2", "\"opcode\":\"BINBYTES8\"");
  BAD("\x8d\xff\xff\xff\xff\xff\xff\xff\xff.", "BINUNICODE8 length 18446744073709551615 runs past");
  BAD("\x96\x00\x00\x00\x00\x00\x00\x00\x40.", "BYTEARRAY8 length");
  BAD("B\xff\xff\xff\xff.", "BINBYTES length 4294967295 runs past the end");
  BAD("X\x05\x00\x00\x00" "ab.", "BINUNICODE length 5 runs past the end of the stream (3 bytes left)");
  BAD("\x8b\xff\xff\xff\xff.", "LONG4 at offset 0: negative byte count -1");
  BAD("T\x00\x00\x00\x80.", "negative byte count");
  BAD("C\x10" "abc", "SHORT_BINBYTES length 16");
  BAD("cos\nsystem", "GLOBAL at offset 0: argument line has no terminating newline");
  BAD("I12", "no terminating newline");
}

static void structure(void) {
  BAD("\x80\x04\xff.", "unknown opcode 0xff at offset 2", "\"offset\":2");
  BAD("\x80\x06N.", "unsupported pickle protocol 6");
  BAD("a.", "APPEND at offset 0: needs 2 objects on the stack but finds 0");
  BAD("\x80\x02NR.", "REDUCE at offset 3: needs 2 objects");
  BAD("N(s.", "SETITEM", "finds 0 above the last MARK");
  BAD("N.N.", "2 bytes of data after STOP");
  BAD("NN.", "stack is not empty at STOP (1 objects and 0 MARKs left)");
  BAD("(N.", "0 objects and 1 MARKs left");
  BAD(".", "STOP at offset 0: needs 1 objects");
  BAD("t.", "TUPLE at offset 0: there is no MARK to close");
  BAD("(NNNd.", "odd number of items (3) for DICT");
  BAD("}(Nu.", "odd number of items (1) for SETITEMS");
  BAD("(Ne.", "no container below the MARK");
  BAD("(o.", "OBJ at offset 1: needs a class after the MARK");
  BAD("h\x05.", "BINGET at offset 0: memo has no entry 5");
  BAD("Nq\x01h\x02.", "memo has no entry 2");
  BAD("g-1\n.", "GET at offset 0: argument is not a memo index");
  BAD("p99999999999999999999\n.", "not a memo index");
  BAD("Ip\n.", "argument is not a decimal integer");
  BAD("F1.5x\n.", "not a float literal");
  BAD("S'abc\n.", "not a quoted string");
  BAD("S'a\\x4'\n.", "not a quoted string with valid escapes");
  BAD("V\\u12\n.", "bad \\\\u or \\\\U escape");
  BAD("V\\U00110000\n.", "bad \\\\u or \\\\U escape");
  BAD("\x8c\x02\xc3\x28.", "not valid UTF-8");
  BAD("c\xff\nx\n.", "module or name is not valid UTF-8");
  BAD("c\nx\n.", "module or name is empty");
  BAD("\x82\x00.", "EXT1 at offset 0: extension code 0 is not positive");
  BAD("\x84\xff\xff\xff\xff.", "extension code -1 is not positive");
  BAD("P\xc3\xa9\n.", "persistent id is not ASCII");
  /* frames */
  BAD("\x95\x02\x00\x00\x00\x00\x00\x00\x00\x95\x00\x00\x00\x00\x00\x00\x00\x00N.",
      "a new frame starts before the current frame ends");
  BAD("\x95\x02\x00\x00\x00\x00\x00\x00\x00NK\x01.", "BININT1 at offset 10: opcode runs past the end of its frame");
  /* STACK_GLOBAL operands must be literal strings */
  BAD("\x80\x04NN\x93.", "STACK_GLOBAL at offset 4: module and name are not string literals");
  BAD("\x80\x04\x8c\x02osC\x06system\x93.", "not string literals");
}

static void deep_nesting(void) {
  size_t n = 1000000;
  char *b = malloc(2 * n + 2);
  memset(b, '(', n);
  memset(b + n, 't', n); /* n nested tuples: fine */
  b[2 * n] = '.';
  int ok = 0;
  char *j = validate(b, 2 * n + 1, &ok);
  CHECK(ok);
  free(j);
  b[n] = 'N'; /* n marks, then one object: unbalanced */
  b[n + 1] = '.';
  j = validate(b, n + 2, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "0 objects and 1000000 MARKs left");
  free(j);
  memset(b, ']', n); /* a million objects on the stack, never reduced */
  b[n] = '.';
  j = validate(b, n + 1, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "999999 objects and 0 MARKs left");
  free(j);
  free(b);
}

static void memo_bounds(void) {
  /* a huge memo index must not allocate a huge array (with ASan returning NULL on huge
   * allocations, an attempt would show up as an out-of-memory error) */
  GOOD("Nr\xff\xff\xff\xffj\xff\xff\xff\xff" "0.", "\"globals\":[]");
  GOOD("Np4611686018427387904\ng4611686018427387904\n0.", "\"globals\":[]");
  GOOD("N\x94h\x00" "0.", "\"globals\":[]"); /* MEMOIZE then BINGET 0 */
  /* key 200 goes to the sparse map (few entries yet); later MEMOIZEs grow the dense array
   * towards it: the entry must still be found, and re-putting it must not count it twice */
  {
    char b[1024], *q = b;
    memcpy(q, "Nr\xc8\x00\x00\x00", 6), q += 6; /* NONE, LONG_BINPUT 200 */
    for (int i = 0; i < 150; i++) *q++ = (char)0x94;   /* MEMOIZE x150: keys 1..150 */
    memcpy(q, "j\xc8\x00\x00\x00" "0", 6), q += 6;  /* LONG_BINGET 200, POP */
    memcpy(q, "r\xc8\x00\x00\x00", 5), q += 5;      /* LONG_BINPUT 200 again */
    memcpy(q, "\x94h\x97" "0", 4), q += 4;            /* MEMOIZE gets key 151 (151 entries), BINGET 151 */
    *q++ = '.';
    int ok = 0;
    char *j = validate(b, (size_t)(q - b), &ok);
    if (!ok) fprintf(stderr, "sparse/dense memo: %s\n", j);
    CHECK(ok);
    free(j);
  }
  GOOD("(0N.", "\"globals\":[]");             /* POP drops a MARK, as CPython does */
  GOOD("(N1N.", "\"globals\":[]");            /* POP_MARK */
}

/* One long literal named by STACK_GLOBAL 200,000 times through the memo: interning makes
 * this linear (decoding the megabyte each time would take minutes), listed once. */
static void repeated_long_global(void) {
  size_t lit = 1 << 20, reps = 200000, n = 2 + 9 + lit + 1 + 1 + reps * 6 + 2;
  unsigned char *b = malloc(n), *q = b;
  *q++ = 0x80, *q++ = 4, *q++ = 0x8d; /* PROTO 4, BINUNICODE8 */
  for (int i = 0; i < 8; i++) *q++ = (unsigned char)((uint64_t)lit >> (8 * i));
  memset(q, 'm', lit), q += lit;
  *q++ = 0x94;                         /* MEMOIZE */
  *q++ = '0';                          /* POP */
  for (size_t i = 0; i < reps; i++) {  /* BINGET 0, BINGET 0, STACK_GLOBAL, POP */
    memcpy(q, "h\x00h\x00\x93" "0", 6);
    q += 6;
  }
  *q++ = 'N', *q++ = '.';
  int ok = 0;
  char *j = validate(b, (size_t)(q - b), &ok);
  CHECK((size_t)(q - b) == n);
  CHECK(ok);
  /* listed once: the pair in "globals", module, name and its one prefix in "imports" */
  CHECK(strlen(j) < 5 * lit + 400);
  free(j);
  free(b);
}

static void globals(void) {
  GOOD("cos\nsystem\n(S'ls'\ntR.", "\"globals\":[[\"os\",\"system\"]]");
  GOOD("(S'x'\nios\nsystem\n.", "\"globals\":[[\"os\",\"system\"]]");
  /* STACK_GLOBAL traced through the memo and DUP, duplicates listed once */
  GOOD("\x80\x04\x8c\x02os\x94\x8c\x06system\x94\x93h\x00h\x01\x93\x86\x8c\x08" "builtins2\x93\x86.",
       "\"globals\":[[\"os\",\"system\"],[\"builtins\",\"builtins\"]]");
  GOOD("\x80\x04\x8c\x08" "builtinsX\x04\x00\x00\x00" "eval\x93.", "[[\"builtins\",\"eval\"]]");
  GOOD("\x80\x04U\x02osU\x06system\x93.", "[[\"os\",\"system\"]]"); /* py2 str operands */
  GOOD("\x80\x04Vos\nV\\u0073ystem\n\x93.", "[[\"os\",\"system\"]]"); /* raw-unicode-escape */
  GOOD("\x82\x07.", "[[\"copyreg._extension_registry\",\"7\"]]");
  GOOD("V\nV\n\x93.", "[[\"\",\"\"]]"); /* empty names (found by the fuzzer: NULL arena) */
  BAD("]q@V\np15\nV\n\x93V\n\x93:.", "STACK_GLOBAL at offset 14: module and name are not string literals");
  /* hostile names still give valid JSON: quotes, backslashes, control bytes, surrogates */
  GOOD("\x80\x04\x8c\x05q\"\\\x01x\x8c\x03\xed\xb2\x80\x93.",
       "[[\"q\\\"\\\\\\u0001x\",\"\\udc80\"]]");
  GOOD("c\xc3\xa9t\xc3\xa9\n\xe6\x97\xa5\n.", "[[\"\xc3\xa9t\xc3\xa9\",\"\xe6\x97\xa5\"]]");
}

/* What each import really is: module, name and its dotted prefixes, the opcode, the protocol
 * in force (Python 2 names are mapped by pickle at protocol <= 2), EXT codes unresolved, and
 * which opcodes call the imported object directly. */
static void imports(void) {
  GOOD("cos\nsystem\n(S'ls'\ntR.",
       "\"imports\":[{\"module\":\"os\",\"name\":\"system\",\"prefixes\":[\"system\"],\"ext\":null,"
       "\"opcode\":\"GLOBAL\",\"protocol\":0,\"calls\":[\"REDUCE\"]}]");
  GOOD("(S'x'\nios\nsystem\n.", "\"opcode\":\"INST\",\"protocol\":0,\"calls\":[\"INST\"]}");
  GOOD("(cos\nsystem\nS'ls'\no.", "\"opcode\":\"GLOBAL\",\"protocol\":0,\"calls\":[\"OBJ\"]}");
  GOOD("cos\nsystem\np0\n0g0\n(S'ls'\ntR.", "\"calls\":[\"REDUCE\"]"); /* through the memo */
  GOOD("\x80\x02" "c__main__\nC\n)\x81.", "\"opcode\":\"GLOBAL\",\"protocol\":2,\"calls\":[\"NEWOBJ\"]}");
  GOOD("\x80\x04\x8c\x02os\x8c\x0e" "path.os.system\x93\x8c\x02ls\x85R.",
       "{\"module\":\"os\",\"name\":\"path.os.system\",\"prefixes\":[\"path\",\"path.os\",\"path.os.system\"],"
       "\"ext\":null,\"opcode\":\"STACK_GLOBAL\",\"protocol\":4,\"calls\":[\"REDUCE\"]}");
  GOOD("\x80\x02" "ccPickle\nloads\n.", "{\"module\":\"cPickle\",\"name\":\"loads\",\"prefixes\":[\"loads\"],"
       "\"ext\":null,\"opcode\":\"GLOBAL\",\"protocol\":2,\"calls\":[]}");
  GOOD("\x80\x02\x83\xef\xbe)R.", "\"imports\":[{\"module\":null,\"name\":null,\"prefixes\":[],"
       "\"ext\":48879,\"opcode\":\"EXT2\",\"protocol\":2,\"calls\":[\"REDUCE\"]}]");
  /* the same global by two opcodes, and under two protocols: each listed */
  GOOD("\x80\x04" "cos\nsystem\n0\x8c\x02os\x8c\x06system\x93.",
       "\"opcode\":\"GLOBAL\",\"protocol\":4,\"calls\":[]},{\"module\":\"os\",\"name\":\"system\"");
  GOOD("cos\nsystem\n0\x80\x04" "cos\nsystem\n.", "\"protocol\":0,\"calls\":[]},{\"module\":\"os\"");
  GOOD("\x80\x04\x8c\x01m\x8c\x04" "a..b\x93.", "\"prefixes\":[\"a\",\"a.\",\"a..b\"]");
  /* issue 11's tricks, as the trust layer (py/elastic_lite/trust/rules.py) receives them: module and
   * name as written, every dotted prefix, the protocol in force, EXT codes unresolved */
  GOOD("\x80\x04\x8c\x0b" "cloudpickle\x8c\x0d" "builtins.exec\x93\x8c\x01x\x85R.",
       "{\"module\":\"cloudpickle\",\"name\":\"builtins.exec\",\"prefixes\":[\"builtins\",\"builtins.exec\"],"
       "\"ext\":null,\"opcode\":\"STACK_GLOBAL\",\"protocol\":4,\"calls\":[\"REDUCE\"]}");
  GOOD("\x80\x04\x8c\x07" "pyodide\x8c\x0b" "code.run_js\x93\x8c\x01x\x85R.",
       "\"prefixes\":[\"code\",\"code.run_js\"]");
  GOOD("\x80\x05\x8c\x16" "elastic_lite._pickling\x8c\x0c" "pickle.loads\x93" "C\x01x\x85R.",
       "{\"module\":\"elastic_lite._pickling\",\"name\":\"pickle.loads\",\"prefixes\":[\"pickle\",\"pickle.loads\"],"
       "\"ext\":null,\"opcode\":\"STACK_GLOBAL\",\"protocol\":5,\"calls\":[\"REDUCE\"]}");
  GOOD("\x80\x04\x8c\x0e" "pathlib._local\x8c\x0f" "Path.write_text\x93N\x85R.",
       "\"prefixes\":[\"Path\",\"Path.write_text\"]");
  GOOD("\x80\x02" "ccommands\ngetoutput\nX\x01\x00\x00\x00x\x85R.",
       "{\"module\":\"commands\",\"name\":\"getoutput\",\"prefixes\":[\"getoutput\"],\"ext\":null,"
       "\"opcode\":\"GLOBAL\",\"protocol\":2,\"calls\":[\"REDUCE\"]}");
  /* a stream that registers an extension code itself, then uses it: the registration is an
   * import like any other, the code stays unresolved (copyreg's registry decides at load) */
  GOOD("\x80\x02" "ccopyreg\nadd_extension\nX\x08\x00\x00\x00" "builtins" "X\x04\x00\x00\x00" "exec" "K\xe1\x87R0"
       "\x82\xe1X\x01\x00\x00\x00x\x85R.",
       "{\"module\":\"copyreg\",\"name\":\"add_extension\",\"prefixes\":[\"add_extension\"],\"ext\":null,"
       "\"opcode\":\"GLOBAL\",\"protocol\":2,\"calls\":[\"REDUCE\"]},{\"module\":null,\"name\":null,\"prefixes\":[],"
       "\"ext\":225,\"opcode\":\"EXT1\",\"protocol\":2,\"calls\":[\"REDUCE\"]}");
  GOOD("\x80\x02\x84\x67\x45\x23\x01X\x01\x00\x00\x00x\x85R.",
       "\"ext\":19088743,\"opcode\":\"EXT4\",\"protocol\":2,\"calls\":[\"REDUCE\"]");
}

int main(void) {
  truncated_and_lengths();
  structure();
  deep_nesting();
  memo_bounds();
  repeated_long_global();
  globals();
  imports();
  CHECK_DONE();
}
