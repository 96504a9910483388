/* The pull reader and the resumable validator give exactly the whole-buffer results, fed in
 * windows of every size, on real checkpoints (format 1.0 and 2.0) and pickle streams and on
 * their damaged variants; the pull reader never asks for an out-of-band buffer's bytes (only
 * its CRC) unless told to compute CRCs itself. Each answer is a fresh allocation of exactly
 * the asked size, so reading outside it is an ASan error. */
#include <dirent.h>
#include <sys/stat.h>
#include <stdint.h>

#include "check.h"

static char *dup_json(el_result *r) {
  CHECK(r);
  if (!r) return strdup("(null result)");
  char *s = strdup(el_result_json(r));
  el_result_free(r);
  return s;
}

/* ---- validator ---- */

static char *validate_in_windows(const uint8_t *p, size_t n, size_t window) {
  el_validator *v = el_validator_new((double)n);
  CHECK(v);
  double off = 0;
  size_t len = window, feeds = 0;
  for (;;) {
    size_t at = (size_t)off, give = len > window ? len : window;
    if (give > n - at) give = n - at;
    uint8_t *copy = malloc(give ? give : 1);
    memcpy(copy, p + at, give);
    int done = el_validator_feed(v, (double)at, copy, give);
    free(copy);
    if (done) break;
    off = el_validator_need_offset(v);
    len = (size_t)el_validator_need_length(v);
    if (++feeds > 4 * n + 16) {
      fprintf(stderr, "validator asks forever (window %zu, at %zu)\n", window, at);
      check_failures++;
      break;
    }
  }
  char *j = dup_json(el_validator_result(v));
  el_validator_free(v);
  return j;
}

static void validator_same(const uint8_t *p, size_t n, const char *what) {
  char *whole = dup_json(el_validate_pickle(p, n));
  static const size_t windows[] = {1, 2, 3, 7, 64, 1000};
  for (size_t i = 0; i < sizeof windows / sizeof *windows; i++) {
    char *part = validate_in_windows(p, n, windows[i]);
    if (strcmp(whole, part)) {
      fprintf(stderr, "%s, windows of %zu:\n  whole: %s\n  parts: %s\n", what, windows[i], whole, part);
      check_failures++;
    }
    free(part);
  }
  free(whole);
}

/* ---- reader ---- */

typedef struct {
  uint64_t off, len;
} range;

/* Reads via el_reader, answering each request with a window of `window` bytes from where
 * it starts (el_reader_feed_window: the reader serves later requests inside it itself). */
static char *read_windowed(const uint8_t *file, size_t n, int flags, double chunk, size_t window) {
  el_reader *r = el_reader_new((double)n, flags, chunk);
  CHECK(r);
  size_t steps = 0;
  for (int k; (k = el_reader_next(r)) != EL_NEED_DONE;) {
    size_t off = (size_t)el_reader_offset(r), len = (size_t)el_reader_length(r);
    if (k == EL_NEED_CRC32 && len > window) { /* too big for a window: the caller's CRC */
      CHECK(el_reader_feed_crc32(r, el_crc32(0, file + off, len)) == 0);
      continue;
    }
    size_t give = len > window ? len : window;
    if (give > n - off) give = n - off;
    uint8_t *copy = malloc(give);
    memcpy(copy, file + off, give);
    CHECK(el_reader_feed_window(r, (double)off, copy, give) == 0);
    if (el_reader_next(r) != EL_NEED_DONE && el_reader_offset(r) > 0) { /* misses the start */
      uint8_t one = 0;
      CHECK(el_reader_feed_window(r, el_reader_offset(r) - 1, &one, 1) == EL_EINVAL);
    }
    free(copy);
    if (++steps > 8 * n + 64) {
      fprintf(stderr, "reader asks forever (windows)\n");
      check_failures++;
      break;
    }
  }
  char *j = dup_json(el_reader_result(r));
  el_reader_free(r);
  return j;
}

/* Reads via el_reader in the given chunk size; records the byte ranges it asked for. */
static char *read_pulled(const uint8_t *file, size_t n, int flags, double chunk, range *asked,
                         size_t *nasked, size_t cap) {
  el_reader *r = el_reader_new((double)n, flags, chunk);
  CHECK(r);
  size_t steps = 0;
  *nasked = 0;
  for (int k; (k = el_reader_next(r)) != EL_NEED_DONE;) {
    size_t off = (size_t)el_reader_offset(r), len = (size_t)el_reader_length(r);
    CHECK(len > 0 && off <= n && len <= n - off);
    if (k == EL_NEED_CRC32) {
      CHECK(el_reader_feed_crc32(r, el_crc32(0, file + off, len)) == 0);
    } else {
      if (*nasked < cap) asked[(*nasked)++] = (range){off, len};
      uint8_t *copy = malloc(len);
      memcpy(copy, file + off, len);
      CHECK(el_reader_feed(r, copy, len) == 0);
      free(copy);
    }
    if (++steps > 8 * n + 64) {
      fprintf(stderr, "reader asks forever\n");
      check_failures++;
      break;
    }
  }
  CHECK(el_reader_feed(r, file, 1) == EL_ESTATE); /* nothing is asked any more */
  char *j = dup_json(el_reader_result(r));
  el_reader_free(r);
  return j;
}

/* The out-of-band buffers a report lists: "buffers":[{"index":0,"offset":O,"length":L,... */
static size_t buffers_of(const char *json, range *out, size_t cap) {
  size_t k = 0;
  for (const char *q = json; (q = strstr(q, "{\"index\":")) && k < cap; q++) {
    const char *o = strstr(q, ",\"offset\":"), *l = strstr(q, ",\"length\":");
    const char *c = strstr(q, ",\"crc32\":\""), *kind = strstr(q, ",\"kind\":");
    if (!o || !l || !c || (kind && kind < c)) continue; /* a record, not a buffer */
    if (!(o < l && l < c)) continue;
    out[k].off = strtoull(o + 10, NULL, 10);
    out[k].len = strtoull(l + 10, NULL, 10);
    k++;
  }
  return k;
}

static void reader_same(const uint8_t *file, size_t n, const char *what) {
  static const int flag_sets[] = {0, EL_INSPECT_VALIDATE, EL_INSPECT_HEADERS_ONLY};
  static const double chunks[] = {64, 100, 4096};
  range asked[4096], bufs[64];
  for (size_t f = 0; f < sizeof flag_sets / sizeof *flag_sets; f++) {
    char *whole = dup_json(el_inspect(file, n, flag_sets[f]));
    size_t nbufs = buffers_of(whole, bufs, 64);
    for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
      for (int core_crc = 0; core_crc < 2; core_crc++) {
        size_t nasked;
        char *part = read_pulled(file, n, flag_sets[f] | (core_crc ? EL_READ_CORE_CRC : 0),
                                 chunks[c], asked, &nasked, 4096);
        if (strcmp(whole, part)) {
          fprintf(stderr, "%s, flags %d, chunk %.0f%s:\n  whole: %s\n  pulled: %s\n", what,
                  flag_sets[f], chunks[c], core_crc ? ", core CRC" : "", whole, part);
          check_failures++;
        }
        for (size_t i = 0; !core_crc && i < nasked; i++)
          for (size_t b = 0; b < nbufs; b++)
            if (bufs[b].len && asked[i].off < bufs[b].off + bufs[b].len &&
                bufs[b].off < asked[i].off + asked[i].len) {
              fprintf(stderr, "%s: the reader asked for bytes %llu+%llu of buffer at %llu\n",
                      what, (unsigned long long)asked[i].off, (unsigned long long)asked[i].len,
                      (unsigned long long)bufs[b].off);
              check_failures++;
            }
        free(part);
      }
      static const size_t windows[] = {100, 5000};
      for (size_t w = 0; w < sizeof windows / sizeof *windows; w++) {
        char *part = read_windowed(file, n, flag_sets[f], chunks[c], windows[w]);
        if (strcmp(whole, part)) {
          fprintf(stderr, "%s, flags %d, chunk %.0f, windows of %zu:\n  whole: %s\n  pulled: %s\n",
                  what, flag_sets[f], chunks[c], windows[w], whole, part);
          check_failures++;
        }
        free(part);
      }
    }
    free(whole);
  }
}

/* Damage: every truncation, and bit flips at a stride through the file. */
static void reader_same_damaged(const uint8_t *file, size_t n, const char *what) {
  uint8_t *m = malloc(n + 1);
  char label[600];
  for (size_t cut = 0; cut < n; cut += 1 + n / 40) {
    snprintf(label, sizeof label, "%s cut at %zu", what, cut);
    memcpy(m, file, cut);
    reader_same(m, cut, label);
  }
  for (size_t i = 0; i < n; i += 1 + n / 60) {
    memcpy(m, file, n);
    m[i] ^= (uint8_t)(1u << (i % 8));
    snprintf(label, sizeof label, "%s bit %zu flipped at %zu", what, i % 8, i);
    reader_same(m, n, label);
  }
  free(m);
}

static int for_each_file(const char *dir, void (*fn)(const uint8_t *, size_t, const char *)) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int count = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode)) continue;
    size_t n;
    unsigned char *b = read_file(path, &n);
    if (!b) continue;
    fn(b, n, path);
    free(b);
    count++;
  }
  closedir(d);
  return count;
}

static void validator_file(const uint8_t *p, size_t n, const char *path) {
  size_t pl = strlen(path);
  if (pl < 4 || strcmp(path + pl - 4, ".pkl")) return;
  validator_same(p, n, path);
  uint8_t *m = malloc(n + 1);
  for (size_t i = 0; i < n; i += 1 + n / 25) { /* damaged streams too */
    memcpy(m, p, n);
    m[i] ^= (uint8_t)(0x11u << (i % 4));
    validator_same(m, n, path);
    validator_same(m, i, path); /* and cut */
  }
  free(m);
}

/* A stream whose STACK_GLOBAL names literals that are long gone from the window by then: the
 * validator asks for them again. */
static void validator_refetch(void) {
  size_t filler = 5000;
  uint8_t *b = malloc(filler + 64), *q = b;
  static const char head[] = "\x80\x04\x8c\x0b" "collections\x94\x8c\x0bOrderedDict\x94" "00";
  memcpy(q, head, sizeof head - 1), q += sizeof head - 1; /* two memoized strings, popped */
  for (size_t i = 0; i < filler / 2; i++) *q++ = 'N', *q++ = '0'; /* NONE, POP */
  memcpy(q, "h\x00h\x01\x93)R.", 8), q += 8;
  validator_same(b, (size_t)(q - b), "refetch");
  char *j = validate_in_windows(b, (size_t)(q - b), 16);
  CHECK_CONTAINS(j, "[[\"collections\",\"OrderedDict\"]]");
  free(j);
  free(b);
}

int main(int argc, char **argv) {
  const char *fixtures = argc > 1 ? argv[1] : "wasm/tests/fixtures";
  const char *corpus = argc > 2 ? argv[2] : "wasm/fuzz/corpus";
  char dir[4096];
  validator_refetch();
  CHECK(for_each_file(fixtures, validator_file) > 90);
  snprintf(dir, sizeof dir, "%s/validate", corpus);
  CHECK(for_each_file(dir, validator_same) > 40);
  snprintf(dir, sizeof dir, "%s/format-1.0", fixtures);
  CHECK(for_each_file(dir, reader_same_damaged) >= 2);
  snprintf(dir, sizeof dir, "%s/container", corpus);
  CHECK(for_each_file(dir, reader_same) >= 16);
  CHECK(for_each_file(dir, reader_same_damaged) >= 16);
  CHECK_DONE();
}
