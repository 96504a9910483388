/* Container writer and reader: round trip, abort, and damage anywhere in the file. */
#include <stdint.h>

#include "check.h"

static const uint8_t P_DICT[] = "\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01" "a\x94K\x01s.";
static const uint8_t P_ODICT[] =
    "\x80\x04\x95)\x00\x00\x00\x00\x00\x00\x00\x8c\x0b" "collections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01" "a\x94K\x01s.";
static const uint8_t P_LIST0[] = "(lp0\nI1\naI2\na.";
#define LEN(a) (sizeof(a) - 1)

/* Three records: x,y (cloudpickle), od (pickle), l (dill); a failed attempt in between. */
static uint8_t *make(size_t *len, size_t *rec_off) {
  el_writer *w = el_writer_new("elastic-lite 0.1.0", "3.14.2", 1764680000000.0);
  CHECK(w);
  CHECK(el_writer_begin_record(w, (const uint8_t *)"x\0y", 3) == 0);
  rec_off[0] = el_writer_size(w);
  CHECK(el_writer_append(w, P_DICT, LEN(P_DICT)) == 0);
  CHECK(el_writer_end_record(w, EL_SER_CLOUDPICKLE) == 0);
  rec_off[1] = el_writer_size(w);
  /* a failed cloudpickle attempt: its bytes must vanish */
  CHECK(el_writer_begin_record(w, (const uint8_t *)"od", 2) == 0);
  CHECK(el_writer_append(w, (const uint8_t *)"GARBAGE-GARBAGE", 15) == 0);
  CHECK(el_writer_abort_record(w) == 0);
  CHECK(el_writer_size(w) == rec_off[1]);
  CHECK(el_writer_append(w, P_DICT, 3) == EL_ESTATE);
  CHECK_CONTAINS(el_writer_error(w), "no record is open");
  CHECK(el_writer_begin_record(w, (const uint8_t *)"od", 2) == 0);
  uint8_t *dst = el_writer_reserve(w, LEN(P_ODICT));
  CHECK(dst);
  memcpy(dst, P_ODICT, LEN(P_ODICT));
  CHECK(el_writer_end_record(w, EL_SER_PICKLE) == 0);
  rec_off[2] = el_writer_size(w);
  CHECK(el_writer_begin_record(w, (const uint8_t *)"l\0", 2) == 0);
  CHECK(el_writer_begin_record(w, (const uint8_t *)"l", 1) == EL_ESTATE);
  CHECK(el_writer_append(w, P_LIST0, LEN(P_LIST0)) == 0);
  CHECK(el_writer_end_record(w, 9) == EL_EINVAL);
  CHECK(el_writer_finish(w) == EL_ESTATE);
  CHECK(el_writer_end_record(w, EL_SER_DILL) == 0);
  CHECK(el_writer_record_count(w) == 3);
  CHECK(el_writer_finish(w) == 0);
  CHECK(el_writer_begin_record(w, (const uint8_t *)"z", 1) == EL_ESTATE);
  *len = el_writer_size(w);
  uint8_t *out = malloc(*len);
  memcpy(out, el_writer_data(w), *len);
  el_writer_free(w);
  return out;
}

static char *inspect(const uint8_t *b, size_t n, int flags, int *ok) {
  el_result *r = el_inspect(b, n, flags);
  CHECK(r);
  char *s = strdup(el_result_json(r));
  CHECK(strlen(s) == el_result_json_len(r));
  *ok = el_result_ok(r);
  el_result_free(r);
  return s;
}

static void round_trip(void) {
  size_t n, off[3];
  uint8_t *f = make(&n, off);
  int ok;
  char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
  CHECK(ok);
  CHECK_CONTAINS(j, "{\"ok\":true,\"format_version\":1,\"format_minor\":0,\"producer\":\"elastic-lite 0.1.0\",\"python\":\"3.14.2\",\"created_ms\":1764680000000");
  CHECK_CONTAINS(j, "\"error\":null,\"records\":[{\"index\":0,\"names\":[\"x\",\"y\"],\"serializer\":\"cloudpickle\"");
  CHECK_CONTAINS(j, "\"names\":[\"od\"],\"serializer\":\"pickle\"");
  CHECK_CONTAINS(j, "\"globals\":[[\"collections\",\"OrderedDict\"]]");
  CHECK_CONTAINS(j, "\"names\":[\"l\"],\"serializer\":\"dill\"");
  CHECK(!strstr(j, "GARBAGE"));
  free(j);
  j = inspect(f, n, EL_INSPECT_HEADERS_ONLY, &ok);
  CHECK(ok);
  CHECK_CONTAINS(j, "\"globals\":null");
  free(j);
  free(f);
}

/* Flip every bit of the file, one at a time: never ok, never a crash, and the records the
 * flip did not touch stay readable. */
static void every_bit_flip(void) {
  size_t n, off[3];
  uint8_t *f = make(&n, off);
  for (size_t i = 0; i < n; i++) {
    for (int bit = 0; bit < 8; bit++) {
      f[i] ^= (uint8_t)(1u << bit);
      int ok;
      char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
      if (ok) {
        fprintf(stderr, "flip of bit %d at offset %zu went unnoticed\n", bit, i);
        check_failures++;
      }
      /* a flip inside record 0 leaves record 2 readable and vice versa */
      if (i >= off[0] && i < off[1]) CHECK_CONTAINS(j, "\"names\":[\"l\"],\"serializer\":\"dill\"");
      if (i >= off[2] && i < n - 40) CHECK_CONTAINS(j, "\"names\":[\"x\",\"y\"],\"serializer\":\"cloudpickle\"");
      free(j);
      f[i] ^= (uint8_t)(1u << bit);
    }
  }
  free(f);
}

static void truncation(void) {
  size_t n, off[3];
  uint8_t *f = make(&n, off);
  for (size_t k = 0; k < n; k++) {
    int ok;
    char *j = inspect(f, k, EL_INSPECT_VALIDATE, &ok);
    CHECK(!ok);
    CHECK(strstr(j, "\"error\":{\"message\":"));
    if (k >= off[2]) CHECK_CONTAINS(j, "\"names\":[\"od\"],\"serializer\":\"pickle\"");
    free(j);
  }
  int ok;
  char *j = inspect(f, n - 1, 0, &ok);
  CHECK_CONTAINS(j, "truncated");
  free(j);
  j = inspect(f, off[2] + 45, 0, &ok);
  CHECK_CONTAINS(j, "record 2 at offset");
  CHECK_CONTAINS(j, "runs past the end");
  free(j);
  free(f);
}

static void specific_damage(void) {
  size_t n, off[3];
  uint8_t *f = make(&n, off);
  int ok;
  /* payload of record 1 */
  f[off[1] + 40] ^= 0x10;
  char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "record 1 at offset");
  CHECK_CONTAINS(j, "payload checksum mismatch");
  CHECK_CONTAINS(j, "\"names\":[\"x\",\"y\"],\"serializer\":\"cloudpickle\"");
  CHECK_CONTAINS(j, "\"index\":2,\"names\":[\"l\"],\"serializer\":\"dill\"");
  free(j);
  f[off[1] + 40] ^= 0x10;
  /* a flipped major-version byte is damage, not a newer format (the checksum says so) */
  uint32_t hl = (uint32_t)f[12] | (uint32_t)f[13] << 8, c;
  f[8] = 2;
  j = inspect(f, n, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "file header at offset 0 is corrupted");
  CHECK_CONTAINS(j, "\"format_version\":null");
  free(j);
  /* a genuinely newer major (its header checksum matches): refused with the upgrade hint */
  c = el_crc32c(0, f, hl - 4);
  memcpy(f + hl - 4, &c, 4); /* little-endian host */
  j = inspect(f, n, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "checkpoint format 2 is newer than this reader supports (1); upgrade elastic-lite");
  CHECK_CONTAINS(j, "\"format_version\":2");
  CHECK_CONTAINS(j, "\"records\":[]");
  free(j);
  /* newer minor of the same major: still read (header CRC recomputed as a writer would) */
  f[8] = 1;
  f[10] = 7;
  c = el_crc32c(0, f, hl - 4);
  memcpy(f + hl - 4, &c, 4);
  j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
  CHECK(ok);
  CHECK_CONTAINS(j, "\"format_minor\":7");
  free(j);
  /* not a checkpoint */
  j = inspect((const uint8_t *)"hello world, this is not it", 27, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "not an Elastic Lite checkpoint");
  free(j);
  j = inspect(NULL, 0, 0, &ok);
  CHECK(!ok);
  free(j);
  free(f);
}

/* No footer (torn write) and a damaged first record header: the scan resynchronizes on the
 * next valid record header, skipping a fake "ELRC" inside a payload. */
static void scan_resync(void) {
  el_writer *w = el_writer_new("p", "3", 0);
  const uint8_t fake[] = "\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00C\x08ELRC\x30\x00\x00\x00\x94.";
  const char *names[] = {"first", "second", "third"};
  size_t off[3];
  for (int i = 0; i < 3; i++) {
    off[i] = el_writer_size(w);
    CHECK(el_writer_begin_record(w, (const uint8_t *)names[i], strlen(names[i])) == 0);
    CHECK(el_writer_append(w, fake, LEN(fake)) == 0);
    CHECK(el_writer_end_record(w, EL_SER_PICKLE) == 0);
  }
  CHECK(el_writer_finish(w) == 0);
  size_t n = el_writer_size(w) - 40; /* footer and part of the index gone */
  uint8_t *f = malloc(n);
  memcpy(f, el_writer_data(w), n);
  el_writer_free(w);
  f[off[0] + 5] ^= 0x40; /* record 0's header length */
  int ok;
  char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "\"records\":[{\"index\":0,\"names\":[],\"serializer\":null");
  CHECK_CONTAINS(j, "header length");
  CHECK_CONTAINS(j, "\"names\":[\"second\"],\"serializer\":\"pickle\"");
  CHECK_CONTAINS(j, "\"names\":[\"third\"],\"serializer\":\"pickle\"");
  /* exactly three records listed: the fake magic inside payload 0 was not taken for one */
  int count = 0;
  for (const char *q = j; (q = strstr(q, "{\"index\":")); q++) count++;
  CHECK(count == 3);
  free(j);
  free(f);
}

static void crc_check_value(void) {
  CHECK(el_crc32c(0, (const uint8_t *)"123456789", 9) == 0xe3069283u);
  CHECK(el_crc32c(el_crc32c(0, (const uint8_t *)"1234", 4), (const uint8_t *)"56789", 5) == 0xe3069283u);
}

int main(void) {
  crc_check_value();
  round_trip();
  every_bit_flip();
  truncation();
  specific_damage();
  scan_resync();
  CHECK_DONE();
}
