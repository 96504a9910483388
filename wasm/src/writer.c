/* Container writer: lays out header, records, index and footer (FORMAT.md) on a sink.
 *
 * A record's header is written by begin_record with placeholder length and CRCs, the payload
 * streams in after it, and end_record patches the header in place. begin_record opens a sink
 * mark, so abort_record drops the whole record (a failed serializer attempt) without a copy. */
#include <stdlib.h>

#include "internal.h"

struct el_writer {
  el_sink *sink;
  int open;           /* a record is open */
  int mark;           /* its sink mark */
  size_t rec_start;   /* its first byte */
  size_t payload_at;  /* first byte of its payload */
  uint64_t *offsets;  /* start of each finished record, for the index */
  size_t count, ocap;
  int finished;
  char err[EL_ERRMSG];
};

static int fail(el_writer *w, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(w->err, sizeof w->err, fmt, ap);
  va_end(ap);
  return rc;
}

static int sink_fail(el_writer *w, int rc) {
  el_fmt(w->err, sizeof w->err, "%s", el_sink_error(w->sink));
  return rc;
}

el_writer *el_writer_new(const char *producer, const char *python_version, double created_ms) {
  if (!producer) producer = "";
  if (!python_version) python_version = "";
  size_t plen = strlen(producer), qlen = strlen(python_version);
  if (plen > 0xFFFF || qlen > 0xFFFF) {
    el_set_last_error("producer and python version must be at most 65535 bytes each");
    return NULL;
  }
  /* NaN fails both comparisons and is refused too */
  if (!(created_ms >= -9.0e15 && created_ms <= 9.0e15)) {
    el_set_last_error("created_ms must be a finite number of milliseconds (|x| <= 9e15)");
    return NULL;
  }
  el_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->sink = el_sink_new())) {
    free(w);
    el_set_last_error("out of memory: could not allocate a writer");
    return NULL;
  }
  size_t hlen = EL_HEADER_FIXED + plen + qlen + 4;
  uint8_t *h = el_sink_reserve(w->sink, hlen);
  if (!h) {
    el_set_last_error("%s", el_sink_error(w->sink));
    el_writer_free(w);
    return NULL;
  }
  memcpy(h, EL_MAGIC, 8);
  el_st16(h + 8, EL_FORMAT_MAJOR);
  el_st16(h + 10, EL_FORMAT_MINOR);
  el_st32(h + 12, (uint32_t)hlen);
  el_st64(h + 16, (uint64_t)(int64_t)created_ms);
  el_st32(h + 24, 0); /* flags */
  el_st16(h + 28, (uint16_t)plen);
  el_st16(h + 30, (uint16_t)qlen);
  memcpy(h + EL_HEADER_FIXED, producer, plen);
  memcpy(h + EL_HEADER_FIXED + plen, python_version, qlen);
  el_st32(h + hlen - 4, el_crc32c(0, h, hlen - 4));
  return w;
}

void el_writer_free(el_writer *w) {
  if (!w) return;
  el_sink_free(w->sink);
  free(w->offsets);
  free(w);
}

const char *el_writer_error(const el_writer *w) { return w ? w->err : "no writer (NULL)"; }
int el_writer_record_count(const el_writer *w) { return w ? (int)w->count : 0; }
const uint8_t *el_writer_data(const el_writer *w) { return w ? el_sink_data(w->sink) : NULL; }
size_t el_writer_size(const el_writer *w) { return w ? el_sink_size(w->sink) : 0; }

int el_writer_begin_record(el_writer *w, const uint8_t *names, size_t names_len) {
  if (!w) return EL_EINVAL;
  if (w->finished) return fail(w, EL_ESTATE, "the checkpoint is already finished");
  if (w->open) return fail(w, EL_ESTATE, "a record is already open; end or abort it first");
  if (!names && names_len) return fail(w, EL_EINVAL, "names is NULL");
  if (names_len > 0xFFFFFF)
    return fail(w, EL_EINVAL, "variable names take %u bytes; the limit is 16 MiB",
                (uint64_t)names_len);
  if (w->count >= 0xFFFFFFFEu) return fail(w, EL_ESTATE, "too many records");
  int mark = el_sink_mark(w->sink);
  if (mark < 0) return sink_fail(w, mark);
  size_t start = el_sink_size(w->sink);
  size_t hlen = EL_REC_FIXED + names_len + 4;
  uint8_t *h = el_sink_reserve(w->sink, hlen);
  if (!h) {
    int rc = sink_fail(w, EL_ENOMEM);
    el_sink_rewind(w->sink, mark);
    return rc;
  }
  memset(h, 0, hlen);
  memcpy(h, EL_REC_MAGIC, 4);
  el_st32(h + 4, (uint32_t)hlen);
  el_st32(h + 8, (uint32_t)w->count);
  el_st32(h + 28, (uint32_t)names_len);
  if (names_len) memcpy(h + EL_REC_FIXED, names, names_len);
  w->open = 1;
  w->mark = mark;
  w->rec_start = start;
  w->payload_at = start + hlen;
  return EL_OK;
}

int el_writer_append(el_writer *w, const uint8_t *p, size_t n) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open; call begin_record first");
  int rc = el_sink_append(w->sink, p, n);
  return rc ? sink_fail(w, rc) : EL_OK;
}

uint8_t *el_writer_reserve(el_writer *w, size_t n) {
  if (!w) return NULL;
  if (!w->open) {
    fail(w, EL_ESTATE, "no record is open; call begin_record first");
    return NULL;
  }
  uint8_t *p = el_sink_reserve(w->sink, n);
  if (!p) sink_fail(w, EL_ENOMEM);
  return p;
}

int el_writer_abort_record(el_writer *w) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open to abort");
  int rc = el_sink_rewind(w->sink, w->mark);
  w->open = 0;
  return rc ? sink_fail(w, rc) : EL_OK;
}

int el_writer_end_record(el_writer *w, int serializer) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open to end");
  if (serializer < EL_SER_PICKLE || serializer > EL_SER_DILL)
    return fail(w, EL_EINVAL, "unknown serializer %d (1 pickle, 2 cloudpickle, 3 dill)",
                (int64_t)serializer);
  if (w->count == w->ocap) {
    size_t cap = w->ocap ? w->ocap * 2 : 16;
    uint64_t *o = realloc(w->offsets, cap * sizeof *o);
    if (!o) return fail(w, EL_ENOMEM, "out of memory: could not grow the record index");
    w->offsets = o;
    w->ocap = cap;
  }
  uint8_t *base = (uint8_t *)el_sink_data(w->sink); /* the writer owns its sink */
  uint8_t *h = base + w->rec_start;
  size_t hlen = w->payload_at - w->rec_start;
  size_t plen = el_sink_size(w->sink) - w->payload_at;
  h[12] = (uint8_t)serializer;
  el_st64(h + 16, (uint64_t)plen);
  el_st32(h + 24, el_crc32c(0, base + w->payload_at, plen));
  el_st32(h + hlen - 4, el_crc32c(0, h, hlen - 4));
  el_sink_commit(w->sink, w->mark);
  w->offsets[w->count++] = (uint64_t)w->rec_start;
  w->open = 0;
  return EL_OK;
}

int el_writer_finish(el_writer *w) {
  if (!w) return EL_EINVAL;
  if (w->finished) return fail(w, EL_ESTATE, "the checkpoint is already finished");
  if (w->open) return fail(w, EL_ESTATE, "a record is still open; end or abort it first");
  int mark = el_sink_mark(w->sink); /* so a failed finish leaves the records as they were */
  if (mark < 0) return sink_fail(w, mark);
  size_t index_at = el_sink_size(w->sink);
  size_t ilen = 8 + 8 * w->count + 4;
  uint8_t *ix = el_sink_reserve(w->sink, ilen + EL_FOOTER_SIZE);
  if (!ix) {
    int rc = sink_fail(w, EL_ENOMEM);
    el_sink_rewind(w->sink, mark);
    return rc;
  }
  memcpy(ix, EL_IDX_MAGIC, 4);
  el_st32(ix + 4, (uint32_t)w->count);
  for (size_t i = 0; i < w->count; i++) el_st64(ix + 8 + 8 * i, w->offsets[i]);
  el_st32(ix + ilen - 4, el_crc32c(0, ix, ilen - 4));
  uint8_t *f = ix + ilen;
  memcpy(f, EL_FOOTER_MAGIC, 4);
  el_st32(f + 4, (uint32_t)w->count);
  el_st64(f + 8, (uint64_t)index_at);
  el_st64(f + 16, (uint64_t)el_sink_size(w->sink));
  el_st16(f + 24, EL_FORMAT_MAJOR);
  el_st16(f + 26, EL_FORMAT_MINOR);
  el_st32(f + 28, el_crc32c(0, f, 28));
  el_sink_commit(w->sink, mark);
  w->finished = 1;
  return EL_OK;
}
