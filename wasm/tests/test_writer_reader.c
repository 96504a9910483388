/* Container writer (2.0) and reader (1.0 and 2.0): round trip, out-of-band buffers, parts
 * handed out as they are written, stored records, and damage anywhere in the file. */
#include <stdint.h>

#include "check.h"
#include "internal.h" /* el_crc32_width: every slicing width */

static const uint8_t P_DICT[] = "\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01" "a\x94K\x01s.";
static const uint8_t P_ODICT[] =
    "\x80\x04\x95)\x00\x00\x00\x00\x00\x00\x00\x8c\x0b" "collections\x94\x8c\x0bOrderedDict\x94\x93\x94)R\x94\x8c\x01" "a\x94K\x01s.";
static const uint8_t P_LIST0[] = "(lp0\nI1\naI2\na.";
/* PROTO 5, NEXT_BUFFER, NEXT_BUFFER, TUPLE2, STOP: a tuple of two out-of-band buffers */
static const uint8_t P_TWO_BUFFERS[] = "\x80\x05\x97\x97\x86.";
static const char MANIFEST[] = "{\"version\":2,\"modules\":[]}";
#define LEN(a) (sizeof(a) - 1)

static uint8_t BUF_A[100], BUF_B[3];
static const char *FIXTURES = "wasm/tests/fixtures";

static const unsigned char *buffers_of(void *ctx, const el_part *p) {
  (void)ctx;
  CHECK(p->kind == EL_PART_BUFFER);
  return p->buffer == 0 ? BUF_A : BUF_B;
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

static int count(const char *hay, const char *needle) {
  int k = 0;
  for (const char *q = hay; (q = strstr(q, needle)); q++) k++;
  return k;
}

/* Records: x,y (cloudpickle) / a failed attempt / od (pickle) / l (dill) / arrays (two
 * out-of-band buffers) / the manifest (JSON). rec_off gets each record's file offset. */
static blob make(size_t *rec_off, int take_each) {
  for (size_t i = 0; i < sizeof BUF_A; i++) BUF_A[i] = (uint8_t)(i * 7 + 1);
  memcpy(BUF_B, "xyz", 3);
  blob out = {0};
  el_writer *w = el_writer_new("elastic-lite 0.1.0", "3.14.2", 1764680000000.0);
  CHECK(w);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"x\0y", 3) == 0);
  CHECK(el_writer_append(w, P_DICT, LEN(P_DICT)) == 0);
  CHECK(el_writer_end_record(w, EL_SER_CLOUDPICKLE, el_crc32(0, P_DICT, LEN(P_DICT)), 0) == 0);
  if (take_each) CHECK(drain(w, &out, buffers_of, NULL) == 2); /* header, record 0 */
  /* a failed cloudpickle attempt: its bytes must vanish */
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"od", 2) == 0);
  CHECK(el_writer_append(w, (const uint8_t *)"GARBAGE-GARBAGE", 15) == 0);
  CHECK(el_writer_add_buffer(w, 5, 0) == 0);
  CHECK(el_writer_abort_record(w) == 0);
  CHECK(el_writer_append(w, P_DICT, 3) == EL_ESTATE);
  CHECK_CONTAINS(el_writer_error(w), "no record is open");
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"od", 2) == 0);
  uint8_t *dst = el_writer_reserve(w, LEN(P_ODICT));
  CHECK(dst);
  memcpy(dst, P_ODICT, LEN(P_ODICT));
  CHECK(el_writer_end_record(w, EL_SER_PICKLE, 0, EL_END_COMPUTE_CRC) == 1);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"l\0", 2) == 0);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"l", 1) == EL_ESTATE);
  CHECK(el_writer_append(w, P_LIST0, LEN(P_LIST0)) == 0);
  CHECK(el_writer_end_record(w, 9, 0, EL_END_COMPUTE_CRC) == EL_EINVAL);
  CHECK(el_writer_finish(w) == EL_ESTATE);
  CHECK(el_writer_end_record(w, EL_SER_DILL, 0, EL_END_COMPUTE_CRC) == 2);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"arrays", 6) == 0);
  CHECK(el_writer_append(w, P_TWO_BUFFERS, LEN(P_TWO_BUFFERS)) == 0);
  CHECK(el_writer_add_buffer(w, sizeof BUF_A, el_crc32(0, BUF_A, sizeof BUF_A)) == 0);
  CHECK(el_writer_add_buffer(w, 3, el_crc32(0, BUF_B, 3)) == 1);
  CHECK(el_writer_add_buffer(w, -1, 0) == EL_EINVAL);
  CHECK(el_writer_add_buffer(w, 0.5, 0) == EL_EINVAL);
  CHECK(el_writer_end_record(w, EL_SER_CLOUDPICKLE, 0, EL_END_COMPUTE_CRC) == 3);
  if (take_each) CHECK(drain(w, &out, buffers_of, NULL) == 7); /* od, l, arrays: 3+2+... */
  CHECK(el_writer_begin_record(w, EL_KIND_MANIFEST, NULL, 0) == 0);
  CHECK(el_writer_add_buffer(w, 1, 0) == EL_EINVAL);
  CHECK(el_writer_append(w, (const uint8_t *)MANIFEST, LEN(MANIFEST)) == 0);
  CHECK(el_writer_end_record(w, EL_SER_PICKLE, 0, EL_END_COMPUTE_CRC) == EL_EINVAL);
  CHECK_CONTAINS(el_writer_error(w), "serializer must be 0");
  CHECK(el_writer_end_record(w, EL_SER_NONE, 0, EL_END_COMPUTE_CRC) == 4);
  CHECK(el_writer_record_count(w) == 5);
  CHECK(el_writer_finish(w) == 0);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"z", 1) == EL_ESTATE);
  CHECK(drain(w, &out, buffers_of, NULL) > 0);
  CHECK(out.len == (size_t)el_writer_file_size(w));
  for (int i = 0; i < 5; i++) {
    rec_off[i] = (size_t)el_writer_record_offset(w, i);
    CHECK(rec_off[i] % 64 == 0 && (size_t)el_writer_record_length(w, i) % 64 == 0);
  }
  rec_off[5] = rec_off[4] + (size_t)el_writer_record_length(w, 4); /* the index */
  CHECK(el_writer_record_offset(w, 5) == -1);
  CHECK(el_writer_take(w)->kind == EL_PART_NONE);
  el_writer_free(w);
  return out;
}

static void round_trip(void) {
  size_t off[6];
  blob f = make(off, 0);
  int ok;
  char *j = inspect(f.data, f.len, EL_INSPECT_VALIDATE, &ok);
  if (!ok) fprintf(stderr, "%s\n", j);
  CHECK(ok);
  CHECK_CONTAINS(j, "{\"ok\":true,\"format_version\":2,\"format_minor\":0,\"producer\":\"elastic-lite 0.1.0\",\"python\":\"3.14.2\",\"created_ms\":1764680000000");
  CHECK_CONTAINS(j, "\"error\":null,\"records\":[{\"index\":0,\"kind\":\"data\",\"kind_code\":1,\"names\":[\"x\",\"y\"],\"serializer\":\"cloudpickle\",\"offset\":64,\"record_length\":128");
  CHECK_CONTAINS(j, "\"names\":[\"od\"],\"serializer\":\"pickle\"");
  CHECK_CONTAINS(j, "\"globals\":[[\"collections\",\"OrderedDict\"]]");
  CHECK_CONTAINS(j, "\"names\":[\"l\"],\"serializer\":\"dill\"");
  CHECK_CONTAINS(j, "\"index\":4,\"kind\":\"manifest\",\"kind_code\":2,\"names\":[],\"serializer\":null");
  CHECK_CONTAINS(j, "\"crc32c\":null,\"crc32\":\"");
  CHECK(!strstr(j, "GARBAGE"));
  /* the buffers sit at 64-aligned file offsets, with their CRC checked */
  char want[200];
  snprintf(want, sizeof want, "\"buffers\":[{\"index\":0,\"offset\":%zu,\"length\":100,\"crc32\":\"%08x\",\"ok\":true},{\"index\":1,\"offset\":%zu,\"length\":3",
           off[3] + 128, el_crc32(0, BUF_A, 100), off[3] + 256);
  CHECK_CONTAINS(j, want);
  CHECK(!memcmp(f.data + off[3] + 128, BUF_A, 100) && !memcmp(f.data + off[3] + 256, "xyz", 3));
  snprintf(want, sizeof want, "\"index_offset\":%zu", off[5]);
  CHECK_CONTAINS(j, want);
  free(j);
  j = inspect(f.data, f.len, EL_INSPECT_HEADERS_ONLY, &ok);
  CHECK(ok);
  CHECK_CONTAINS(j, "\"globals\":null");
  CHECK_CONTAINS(j, "\"length\":3,\"crc32\":");
  CHECK_CONTAINS(j, "\"ok\":null}");
  free(j);
  /* handing out parts after each record gives the same bytes */
  size_t off2[6];
  blob g = make(off2, 1);
  CHECK(g.len == f.len && !memcmp(g.data, f.data, f.len));
  free(g.data);
  free(f.data);
}

/* A record is position independent: the same group in another checkpoint, at another
 * offset, has the same bytes; a checkpoint can reuse it by length alone. */
static const unsigned char *stored_from(void *ctx, const el_part *p) {
  CHECK(p->kind == EL_PART_STORED);
  return (const unsigned char *)ctx;
}

static void stored_records(void) {
  size_t off[6];
  blob a = make(off, 0);
  size_t len3 = off[4] - off[3]; /* the record with buffers */
  blob b = {0};
  el_writer *w = el_writer_new("elastic-lite 0.2.0 with a longer producer name to move things", "3.14.2", 1.0);
  CHECK(el_writer_add_stored_record(w, (double)len3) == 0);
  CHECK(el_writer_add_stored_record(w, 100) == EL_EINVAL);
  CHECK(el_writer_add_stored_record(w, 0) == EL_EINVAL);
  CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)"arrays", 6) == 0);
  CHECK(el_writer_add_stored_record(w, 64) == EL_ESTATE);
  CHECK(el_writer_append(w, P_TWO_BUFFERS, LEN(P_TWO_BUFFERS)) == 0);
  CHECK(el_writer_add_buffer(w, sizeof BUF_A, el_crc32(0, BUF_A, sizeof BUF_A)) == 0);
  CHECK(el_writer_add_buffer(w, 3, el_crc32(0, BUF_B, 3)) == 1);
  CHECK(el_writer_end_record(w, EL_SER_CLOUDPICKLE, el_crc32(0, P_TWO_BUFFERS, LEN(P_TWO_BUFFERS)), 0) == 1);
  CHECK(el_writer_finish(w) == 0);
  /* the stored record comes from checkpoint a; the new one's buffers from memory. The first
   * part taken alone, the others two at a time (el_writer_take_many: each part's bytes still
   * valid once the next one is taken) */
  el_part batch[2];
  size_t have = 0, at = 0;
  CHECK(el_writer_take_many(NULL, batch, 2) == 0);
  for (const el_part *p = el_writer_take(w); p->kind != EL_PART_NONE;
       p = at < have ? &batch[at++] : (have = el_writer_take_many(w, batch, 2), at = 0,
                                      have ? &batch[at++] : el_writer_take(w))) {
    CHECK(p->offset == b.len);
    if (p->kind == EL_PART_BYTES) blob_put(&b, (const void *)(uintptr_t)p->data, (size_t)p->length);
    else if (p->kind == EL_PART_STORED) blob_put(&b, stored_from(a.data + off[3], p), (size_t)p->length);
    else blob_put(&b, buffers_of(NULL, p), (size_t)p->length);
  }
  size_t r0 = (size_t)el_writer_record_offset(w, 0), r1 = (size_t)el_writer_record_offset(w, 1);
  CHECK(r0 == 128 && r1 == r0 + len3);
  CHECK(!memcmp(b.data + r1, a.data + off[3], len3)); /* the same bytes at another offset */
  el_writer_free(w);
  int ok;
  char *j = inspect(b.data, b.len, EL_INSPECT_VALIDATE, &ok);
  CHECK(ok);
  CHECK(count(j, "\"names\":[\"arrays\"]") == 2);
  free(j);
  free(a.data);
  free(b.data);
}

/* Flip every bit of the file, one at a time: never ok, never a crash, and the records the
 * flip did not touch stay readable. */
static void every_bit_flip(uint8_t *f, size_t n, const size_t *off, int nrec, const char *first,
                           const char *last) {
  for (size_t i = 0; i < n; i++) {
    for (int bit = 0; bit < 8; bit++) {
      f[i] ^= (uint8_t)(1u << bit);
      int ok;
      char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
      if (ok) {
        fprintf(stderr, "flip of bit %d at offset %zu went unnoticed\n", bit, i);
        check_failures++;
      }
      /* a flip inside the first record leaves the last readable and vice versa */
      if (i >= off[0] && i < off[1]) CHECK_CONTAINS(j, last);
      if (i >= off[nrec - 1] && i < off[nrec]) CHECK_CONTAINS(j, first);
      free(j);
      f[i] ^= (uint8_t)(1u << bit);
    }
  }
}

static void damage_v2(void) {
  size_t off[6];
  blob f = make(off, 0);
  every_bit_flip(f.data, f.len, off, 5, "\"names\":[\"x\",\"y\"],\"serializer\":\"cloudpickle\",\"offset\":64,\"record_length\":128,\"payload_offset\":111,\"length\":21,\"crc32c\":null,\"crc32\":",
                 "\"kind\":\"manifest\",\"kind_code\":2,\"names\":[],\"serializer\":null");
  int ok;
  /* a flip in the padding after buffer A: structure error naming the offset */
  f.data[off[3] + 230] ^= 1;
  char *j = inspect(f.data, f.len, EL_INSPECT_HEADERS_ONLY, &ok);
  CHECK(ok); /* headers only: padding is content, not read */
  free(j);
  j = inspect(f.data, f.len, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "\"code\":\"structure\"");
  CHECK_CONTAINS(j, "is not zero");
  free(j);
  f.data[off[3] + 230] ^= 1;
  f.data[off[3] + 256 + 1] ^= 4; /* buffer B */
  j = inspect(f.data, f.len, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "record 3 at offset");
  CHECK_CONTAINS(j, "buffer 1 checksum mismatch");
  CHECK_CONTAINS(j, "\"code\":\"checksum\"");
  CHECK_CONTAINS(j, "\"length\":3,\"crc32\":");
  CHECK_CONTAINS(j, "\"ok\":false}");
  free(j);
  f.data[off[3] + 256 + 1] ^= 4;
  for (size_t k = 0; k < f.len; k++) { /* every truncation */
    j = inspect(f.data, k, EL_INSPECT_VALIDATE, &ok);
    CHECK(!ok);
    CHECK_CONTAINS(j, "\"error\":{\"code\":\"");
    if (k >= off[3]) CHECK_CONTAINS(j, "\"names\":[\"od\"],\"serializer\":\"pickle\"");
    free(j);
  }
  j = inspect(f.data, f.len - 1, 0, &ok);
  CHECK_CONTAINS(j, "truncated");
  CHECK_CONTAINS(j, "\"code\":\"truncated\"");
  free(j);
  j = inspect(f.data, off[3] + 100, 0, &ok);
  CHECK_CONTAINS(j, "record 3 at offset");
  CHECK_CONTAINS(j, "runs past the end");
  free(j);
  /* a newer major with a valid header checksum: refused with the upgrade hint */
  uint32_t hl = (uint32_t)f.data[12] | (uint32_t)f.data[13] << 8, c;
  f.data[8] = 3;
  c = el_crc32c(0, f.data, hl - 4);
  memcpy(f.data + hl - 4, &c, 4); /* little-endian host */
  j = inspect(f.data, f.len, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "checkpoint format 3 is newer than this reader supports (2); upgrade elastic-lite");
  CHECK_CONTAINS(j, "\"code\":\"newer-format\"");
  CHECK_CONTAINS(j, "\"format_version\":3");
  CHECK_CONTAINS(j, "\"records\":[]");
  free(j);
  /* newer minor of the same major: still read */
  f.data[8] = 2;
  f.data[10] = 7;
  c = el_crc32c(0, f.data, hl - 4);
  memcpy(f.data + hl - 4, &c, 4);
  j = inspect(f.data, f.len, EL_INSPECT_VALIDATE, &ok);
  CHECK(ok);
  CHECK_CONTAINS(j, "\"format_minor\":7");
  free(j);
  /* an unknown record kind (a newer minor): listed, reported, the others readable */
  uint8_t *r1 = f.data + off[1];
  uint32_t k1 = (uint32_t)r1[4] | (uint32_t)r1[5] << 8;
  r1[8] = 9;
  c = el_crc32c(0, r1, k1 - 4);
  memcpy(r1 + k1 - 4, &c, 4);
  j = inspect(f.data, f.len, EL_INSPECT_VALIDATE, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "\"kind\":null,\"kind_code\":9,\"names\":[\"od\"]");
  CHECK_CONTAINS(j, "\"code\":\"unknown-kind\"");
  CHECK_CONTAINS(j, "record kind 9 is not readable by this version");
  CHECK(count(j, "\"ok\":true,\"error\":null") == 4);
  free(j);
  j = inspect((const uint8_t *)"hello world, this is not it", 27, 0, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "not an Elastic Lite checkpoint");
  CHECK_CONTAINS(j, "\"code\":\"not-checkpoint\"");
  free(j);
  j = inspect(NULL, 0, 0, &ok);
  CHECK(!ok);
  free(j);
  free(f.data);
}

/* No footer (torn write) and a damaged first record header: the scan resynchronizes on the
 * next valid record header, skipping a fake "ELRC" inside a stream. */
static void scan_resync(void) {
  el_writer *w = el_writer_new("p", "3", 0);
  /* a BINBYTES whose content looks like a record header, at a 64-aligned offset */
  uint8_t fake[80];
  memcpy(fake, "\x80\x04\x43\x4c", 4);
  memset(fake + 4, 0, sizeof fake - 4);
  memcpy(fake + 20, "ELRC\x30\x00\x00\x00", 8);
  fake[sizeof fake - 2] = 0x94;
  fake[sizeof fake - 1] = '.';
  const char *names[] = {"first", "second", "third"};
  for (int i = 0; i < 3; i++) {
    CHECK(el_writer_begin_record(w, EL_KIND_DATA, (const uint8_t *)names[i], strlen(names[i])) == 0);
    CHECK(el_writer_append(w, fake, sizeof fake) == 0);
    CHECK(el_writer_end_record(w, EL_SER_PICKLE, 0, EL_END_COMPUTE_CRC) == i);
  }
  size_t off0 = (size_t)el_writer_record_offset(w, 0);
  CHECK(el_writer_finish(w) == 0);
  blob f = {0};
  drain(w, &f, buffers_of, NULL);
  el_writer_free(w);
  size_t n = f.len - 40; /* footer and part of the index gone */
  f.data[off0 + 5] ^= 0x40; /* record 0's header length */
  int ok;
  char *j = inspect(f.data, n, EL_INSPECT_VALIDATE, &ok);
  CHECK(!ok);
  CHECK_CONTAINS(j, "\"records\":[{\"index\":0,\"kind\":null,\"kind_code\":null,\"names\":[],\"serializer\":null");
  CHECK_CONTAINS(j, "header length");
  CHECK_CONTAINS(j, "\"names\":[\"second\"],\"serializer\":\"pickle\"");
  CHECK_CONTAINS(j, "\"names\":[\"third\"],\"serializer\":\"pickle\"");
  CHECK(count(j, "{\"index\":") == 3); /* the fake magic inside stream 0 was not taken */
  free(j);
  free(f.data);
}

/* The committed format-1.0 checkpoints (written by the 1.0 writer) still read, and damage
 * in them is still found. */
static void format_1_0(void) {
  const char *files[] = {"cpython-3.11.elc", "pyodide-3.14.elc"};
  for (int k = 0; k < 2; k++) {
    char path[512];
    snprintf(path, sizeof path, "%s/format-1.0/%s", FIXTURES, files[k]);
    size_t n;
    uint8_t *f = read_file(path, &n);
    CHECK(f);
    if (!f) continue;
    int ok;
    char *j = inspect(f, n, EL_INSPECT_VALIDATE, &ok);
    CHECK(ok);
    CHECK_CONTAINS(j, "\"format_version\":1,\"format_minor\":0,\"producer\":\"elastic-lite 0.1.0\"");
    CHECK_CONTAINS(j, "\"names\":[\"triple\"],\"serializer\":\"cloudpickle\"");
    CHECK_CONTAINS(j, "\"names\":[\"shared\",\"alias\"]");
    CHECK_CONTAINS(j, "\"names\":[\"lock\"],\"serializer\":\"dill\"");
    CHECK_CONTAINS(j, "[\"dill._dill\",\"_create_lock\"]");
    CHECK_CONTAINS(j, "\"kind\":\"data\",\"kind_code\":1");
    CHECK_CONTAINS(j, "\"crc32\":null,\"buffers\":[]");
    CHECK(count(j, "{\"index\":") == 7);
    free(j);
    if (k == 0) {
      /* record offsets, to check that flips elsewhere leave them readable */
      size_t off[8], c = 0;
      for (size_t i = 0; i + 4 <= n && c < 8; i++)
        if (!memcmp(f + i, "ELRC", 4)) off[c++] = i;
      const uint8_t *x = NULL;
      for (size_t i = n - 40; i > 0 && !x; i--)
        if (!memcmp(f + i, "ELIX", 4)) x = f + i;
      CHECK(c == 7 && x);
      off[7] = x ? (size_t)(x - f) : n;
      every_bit_flip(f, n, off, 7, "\"names\":[\"scale\"]", "\"names\":[\"__elastic_lite_manifest__\"]");
      for (size_t len = 0; len < n; len++) {
        j = inspect(f, len, EL_INSPECT_VALIDATE, &ok);
        CHECK(!ok);
        if (len > off[2]) CHECK_CONTAINS(j, "\"names\":[\"triple\"]");
        free(j);
      }
    }
    free(f);
  }
}

static void api_misuse(void) {
  el_writer *w = el_writer_new("p", "3", 0);
  CHECK(el_writer_begin_record(w, 0, (const uint8_t *)"x", 1) == EL_EINVAL);
  CHECK(el_writer_begin_record(w, 4, (const uint8_t *)"x", 1) == EL_EINVAL);
  CHECK_CONTAINS(el_writer_error(w), "unknown record kind 4");
  CHECK(el_writer_add_buffer(w, 1, 0) == EL_ESTATE);
  CHECK(el_writer_end_record(w, 1, 0, 0) == EL_ESTATE);
  CHECK(el_writer_abort_record(w) == EL_ESTATE);
  CHECK(el_writer_begin_record(w, EL_KIND_HISTORY, (const uint8_t *)"h", 1) == 0);
  CHECK(el_writer_append(w, (const uint8_t *)"[\"\xff\"]", 5) == 0);
  CHECK(el_writer_end_record(w, EL_SER_NONE, 0, EL_END_COMPUTE_CRC) == EL_EINVAL);
  CHECK_CONTAINS(el_writer_error(w), "must be UTF-8 JSON");
  CHECK(el_writer_abort_record(w) == 0);
  CHECK(el_writer_take(w)->kind == EL_PART_BYTES); /* the file header */
  CHECK(el_writer_take(w)->kind == EL_PART_NONE);
  CHECK(el_writer_finish(w) == 0);
  CHECK(el_writer_finish(w) == EL_ESTATE);
  const el_part *p = el_writer_take(w);
  CHECK(p->kind == EL_PART_BYTES && p->record == EL_PART_TAIL && p->offset == 64 && p->length == 12 + 32);
  el_writer_free(w);
  CHECK(el_writer_take(NULL) == NULL);
  CHECK(el_writer_new("p", "3", 0.0 / 0.0) == NULL);
  CHECK_CONTAINS(el_last_error(), "created_ms");
}

static void crc_check_values(void) {
  const uint8_t *s = (const uint8_t *)"123456789";
  CHECK(el_crc32c(0, s, 9) == 0xe3069283u);
  CHECK(el_crc32c(el_crc32c(0, s, 4), s + 4, 5) == 0xe3069283u);
  CHECK(el_crc32(0, s, 9) == 0xcbf43926u);
  CHECK(el_crc32(el_crc32(0, s, 4), s + 4, 5) == 0xcbf43926u);
  /* every slicing width and alignment agrees with bytewise */
  uint8_t buf[1000]; /* braiding needs 2 blocks of 40 bytes: lengths 0..999 cover both paths */
  for (size_t i = 0; i < sizeof buf; i++) buf[i] = (uint8_t)(i * 131 + 7);
  for (size_t start = 0; start < 9; start++)
    for (size_t len = 0; len + start <= sizeof buf; len += len < 130 ? 1 : 37) {
      uint32_t want = el_crc32_width(1, 0, buf + start, len);
      CHECK(el_crc32_width(8, 0, buf + start, len) == want);
      CHECK(el_crc32_width(16, 0, buf + start, len) == want);
      CHECK(el_crc32_width(5, 0, buf + start, len) == want);
      CHECK(el_crc32(0, buf + start, len) == want);
      uint32_t wantc = el_crc32c_width(1, 0, buf + start, len);
      CHECK(el_crc32c_width(16, 0, buf + start, len) == wantc && el_crc32c(0, buf + start, len) == wantc);
    }
}

int main(int argc, char **argv) {
  if (argc > 1) FIXTURES = argv[1];
  crc_check_values();
  round_trip();
  stored_records();
  damage_v2();
  scan_resync();
  format_1_0();
  api_misuse();
  CHECK_DONE();
}
