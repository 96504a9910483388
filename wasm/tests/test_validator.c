/* The validator on real streams from pickle, cloudpickle and dill at protocols 0-5
 * (fixtures made by make_fixtures.py): every one is accepted, its globals equal those an
 * independent pickletools-based reference found, and every truncation of it is refused. */
#include <dirent.h>
#include <stdint.h>

#include "check.h"

/* The "globals":[...] array of a validation report, as a string (malloc'ed). */
static char *globals_of(const char *json) {
  const char *g = strstr(json, "\"globals\":");
  const char *e = strstr(json, ",\"imports\":");
  if (!g || !e || e < g) return strdup("");
  g += 10;
  return strndup(g, (size_t)(e - g));
}

/* Flips every bit of a real stream, one at a time: each result is a report (accepted or an
 * error with an offset inside the stream), never a crash or a sanitizer finding. */
static int flip_every_bit(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t n;
  unsigned char *b = read_file(path, &n);
  CHECK(b && n > 0);
  if (!b) return 0;
  int rejected = 0;
  for (size_t i = 0; i < n; i++) {
    for (int bit = 0; bit < 8; bit++) {
      b[i] ^= (unsigned char)(1u << bit);
      el_result *r = el_validate_pickle(b, n);
      CHECK(r);
      const char *j = el_result_json(r);
      if (!el_result_ok(r)) {
        rejected++;
        const char *o = strstr(j, "\"offset\":");
        CHECK(o && (size_t)strtoull(o + 9, NULL, 10) <= n);
      }
      el_result_free(r);
      b[i] ^= (unsigned char)(1u << bit);
    }
  }
  free(b);
  return rejected;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "wasm/tests/fixtures";
  DIR *d = opendir(dir);
  CHECK(d);
  if (!d) CHECK_DONE();
  int files = 0, with_globals = 0, protos[6] = {0};
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t nl = strlen(e->d_name);
    if (nl < 5 || strcmp(e->d_name + nl - 4, ".pkl")) continue;
    char path[4096], gpath[4096];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    snprintf(gpath, sizeof gpath, "%s/%.*s.globals.json", dir, (int)(nl - 4), e->d_name);
    size_t n, gn;
    unsigned char *b = read_file(path, &n);
    char *expect = (char *)read_file(gpath, &gn);
    CHECK(b && expect);
    if (!b || !expect) continue;
    expect = realloc(expect, gn + 1);
    expect[gn] = 0;
    files++;
    el_result *r = el_validate_pickle(b, n);
    CHECK(r);
    if (!el_result_ok(r)) {
      fprintf(stderr, "%s rejected: %s\n", e->d_name, el_result_json(r));
      check_failures++;
    }
    char *got = globals_of(el_result_json(r));
    if (strcmp(got, expect)) {
      fprintf(stderr, "%s: globals differ\n  validator: %s\n  reference: %s\n", e->d_name, got, expect);
      check_failures++;
    }
    if (strcmp(expect, "[]")) with_globals++;
    const char *pr = strstr(el_result_json(r), "\"protocol\":");
    if (pr) protos[pr[11] - '0' < 6 && pr[11] >= '0' ? pr[11] - '0' : 0]++;
    free(got);
    el_result_free(r);
    /* every proper prefix is refused (sampled for big streams to keep ASan runs short) */
    size_t step = n > 4096 ? n / 512 : 1;
    for (size_t k = 0; k < n; k += step) {
      r = el_validate_pickle(b, k);
      CHECK(r && !el_result_ok(r));
      el_result_free(r);
    }
    free(b);
    free(expect);
  }
  closedir(d);
  int rej = flip_every_bit(dir, "cloudpickle-p5-functions.pkl") + flip_every_bit(dir, "dill-p2-class.pkl");
  CHECK(rej > 1000); /* most flips are caught: opcodes, lengths, memo indices, frames */
  fprintf(stderr, "bit flips of two real streams: %d rejected\n", rej);
  fprintf(stderr, "%d real streams validated (%d import globals)\n", files, with_globals);
  CHECK(files >= 90);
  CHECK(with_globals >= 30);
  for (int p = 2; p < 6; p++) CHECK(protos[p] > 0); /* PROTO opcode seen at 2..5 */
  CHECK_DONE();
}
