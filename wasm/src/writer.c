/* Container writer, format 2.0 (wasm/FORMAT.md): lays out header, records, buffer tables,
 * padding, index and footer, and hands the file out part by part as it is written.
 *
 * Memory: the core's bytes live in one sink laid out in file order minus the out-of-band
 * buffers and stored records (which never enter the core):
 *
 *   [handed out][committed, not yet taken][open record: header + stream so far]
 *   0           taken                     rec_at                              sink size
 *
 * A queue of pending parts says what comes next in the file: a run of sink bytes, or the
 * place of a buffer / stored record the caller writes itself. begin_record drops what was
 * handed out (or compacts), so a caller that takes after every record keeps the core at one
 * record. A record's header is written by begin_record with placeholder lengths and CRCs and
 * patched in place by end_record, which also knows the whole layout only then (the buffers
 * follow the stream); abort_record truncates the sink back to the record's first byte. */
#include <stdlib.h>

#include "internal.h"
#include "layout.h"

typedef struct {
  uint32_t kind, record, buffer;
  uint64_t offset, length;
  size_t at; /* EL_PART_BYTES: position in the sink */
} pending_part;

typedef struct {
  uint64_t offset, length;
} span;

typedef struct {
  uint64_t length;
  uint32_t crc;
} oob_buffer;

struct el_writer {
  el_sink *sink;
  size_t taken; /* sink bytes before this were handed out */
  pending_part *queue;
  size_t qhead, qlen, qcap;
  el_part current; /* the part handed out last (kind NONE once dropped) */
  uint64_t file_pos; /* file offset where the next record starts */
  span *records;     /* offset and length of each record, for the index */
  size_t count, rcap;
  /* the open record */
  int open, kind;
  size_t rec_at, stream_at; /* sink positions of its header and of its stream */
  oob_buffer *bufs;
  size_t nbuf, bcap;
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

/* Moves the parts not yet handed out to the front of the queue. */
static void queue_compact(el_writer *w) {
  if (!w->qhead) return;
  memmove(w->queue, w->queue + w->qhead, (w->qlen - w->qhead) * sizeof *w->queue);
  w->qlen -= w->qhead;
  w->qhead = 0;
}

/* Makes room for `more` items after the first `len` of an array; 0 if out of memory. */
static int reserve_items(void **arr, size_t *cap, size_t len, size_t more, size_t elem) {
  return more <= SIZE_MAX - len && el_grow(arr, cap, len + more, elem);
}

/* A double that is a whole number of bytes in [0, EL_MAX_LENGTH]. */
static int whole_length(double v) {
  return v >= 0 && v <= (double)EL_MAX_LENGTH && v == (double)(uint64_t)v;
}

static void push_part(el_writer *w, uint32_t kind, uint32_t record, uint32_t buffer,
                      uint64_t offset, uint64_t length, size_t at) {
  pending_part *p = &w->queue[w->qlen++]; /* room was reserved by the caller */
  p->kind = kind;
  p->record = record;
  p->buffer = buffer;
  p->offset = offset;
  p->length = length;
  p->at = at;
}

/* Forgets the part handed out last: its sink bytes may now be dropped. */
static void drop_current(el_writer *w) {
  if (w->current.kind == EL_PART_BYTES) w->taken += (size_t)w->current.length;
  w->current.kind = EL_PART_NONE;
}

/* Frees what was handed out, so the sink holds only what is still pending. Cheap: a reset
 * when everything was taken, a memmove of the untaken rest only when that halves the sink. */
static void compact(el_writer *w) {
  size_t size = el_sink_size(w->sink);
  if (w->taken == size) {
    el_sink_truncate(w->sink, 0);
    el_sink_release(w->sink, (size_t)64 << 20); /* a large record's buffer is not kept */
    w->taken = 0;
  } else if (w->taken >= ((size_t)1 << 20) && w->taken >= size / 2) {
    el_sink_drop_front(w->sink, w->taken);
    for (size_t i = w->qhead; i < w->qlen; i++)
      if (w->queue[i].kind == EL_PART_BYTES) w->queue[i].at -= w->taken;
    w->taken = 0;
  }
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
  if (!w || !(w->sink = el_sink_new()) ||
      !reserve_items((void **)&w->queue, &w->qcap, 0, 1, sizeof *w->queue)) {
    el_writer_free(w);
    el_set_last_error("out of memory: could not allocate a writer");
    return NULL;
  }
  /* the header is padded to a multiple of 64 so the first record starts aligned; the
   * padding is the reserved space of the header, covered by its CRC */
  size_t hlen = (size_t)el_align_up(EL_FH_STRINGS + plen + qlen + 4);
  uint8_t *h = el_sink_reserve(w->sink, hlen);
  if (!h) {
    el_set_last_error("%s", el_sink_error(w->sink));
    el_writer_free(w);
    return NULL;
  }
  memset(h, 0, hlen);
  memcpy(h + EL_FH_MAGIC, EL_MAGIC, EL_MAGIC_LEN);
  el_st16(h + EL_FH_MAJOR, EL_FORMAT_MAJOR);
  el_st16(h + EL_FH_MINOR, EL_FORMAT_MINOR);
  el_st32(h + EL_FH_LENGTH, (uint32_t)hlen);
  el_st64(h + EL_FH_CREATED, (uint64_t)(int64_t)created_ms);
  el_st32(h + EL_FH_FLAGS, 0);
  el_st16(h + EL_FH_PRODUCER_LEN, (uint16_t)plen);
  el_st16(h + EL_FH_PYTHON_LEN, (uint16_t)qlen);
  memcpy(h + EL_FH_STRINGS, producer, plen);
  memcpy(h + EL_FH_STRINGS + plen, python_version, qlen);
  el_st32(h + hlen - 4, el_crc32c(0, h, hlen - 4));
  push_part(w, EL_PART_BYTES, EL_PART_HEAD, 0, 0, hlen, 0);
  w->file_pos = hlen;
  return w;
}

void el_writer_free(el_writer *w) {
  if (!w) return;
  el_sink_free(w->sink);
  free(w->queue);
  free(w->records);
  free(w->bufs);
  free(w);
}

const char *el_writer_error(const el_writer *w) { return w ? w->err : "no writer (NULL)"; }
int el_writer_record_count(const el_writer *w) { return w ? (int)w->count : 0; }
double el_writer_file_size(const el_writer *w) { return w ? (double)w->file_pos : 0; }

double el_writer_record_offset(const el_writer *w, int record) {
  return w && record >= 0 && (size_t)record < w->count ? (double)w->records[record].offset : -1;
}

double el_writer_record_length(const el_writer *w, int record) {
  return w && record >= 0 && (size_t)record < w->count ? (double)w->records[record].length : -1;
}

static int check_can_add(el_writer *w) {
  if (w->finished) return fail(w, EL_ESTATE, "the checkpoint is already finished");
  if (w->open) return fail(w, EL_ESTATE, "a record is already open; end or abort it first");
  if (w->count >= 0xFFFFFFF0u) return fail(w, EL_ESTATE, "too many records");
  return EL_OK;
}

int el_writer_begin_record(el_writer *w, int kind, const uint8_t *names, size_t names_len) {
  if (!w) return EL_EINVAL;
  int rc = check_can_add(w);
  if (rc) return rc;
  if (kind < EL_KIND_DATA || kind > EL_KIND_HISTORY)
    return fail(w, EL_EINVAL, "unknown record kind %d (1 data, 2 manifest, 3 history)",
                (int64_t)kind);
  if (!names && names_len) return fail(w, EL_EINVAL, "names is NULL");
  if (names_len > EL_MAX_NAMES_LEN)
    return fail(w, EL_EINVAL, "variable names take %u bytes; the limit is 16 MiB",
                (uint64_t)names_len);
  drop_current(w);
  compact(w);
  size_t start = el_sink_size(w->sink);
  size_t hlen = EL_R2_MIN + names_len;
  uint8_t *h = el_sink_reserve(w->sink, hlen);
  if (!h) return sink_fail(w, EL_ENOMEM);
  memset(h, 0, hlen); /* lengths and CRCs are patched by end_record */
  memcpy(h, EL_REC_MAGIC, EL_MAGIC4_LEN);
  el_st32(h + EL_R2_LENGTH, (uint32_t)hlen);
  h[EL_R2_KIND] = (uint8_t)kind;
  el_st32(h + EL_R2_NAMES_LEN, (uint32_t)names_len);
  if (names_len) memcpy(h + EL_R2_NAMES, names, names_len);
  w->open = 1;
  w->kind = kind;
  w->rec_at = start;
  w->stream_at = start + hlen;
  w->nbuf = 0;
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

int el_writer_add_buffer(el_writer *w, double length, uint32_t crc32) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open; call begin_record first");
  if (w->kind != EL_KIND_DATA)
    return fail(w, EL_EINVAL, "only data records (kind 1) hold out-of-band buffers");
  if (!whole_length(length))
    return fail(w, EL_EINVAL, "buffer length must be a whole number of bytes up to 2^53");
  if (w->nbuf >= EL_MAX_BUFFERS)
    return fail(w, EL_ENOMEM, "too many out-of-band buffers in one record (limit %u)",
                (uint64_t)EL_MAX_BUFFERS);
  if (!reserve_items((void **)&w->bufs, &w->bcap, w->nbuf, 1, sizeof *w->bufs))
    return fail(w, EL_ENOMEM, "out of memory: could not register an out-of-band buffer");
  w->bufs[w->nbuf].length = (uint64_t)length;
  w->bufs[w->nbuf].crc = crc32;
  return (int)w->nbuf++;
}

int el_writer_abort_record(el_writer *w) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open to abort");
  el_sink_truncate(w->sink, w->rec_at);
  w->open = 0;
  w->nbuf = 0;
  return EL_OK;
}

/* The record's layout (FORMAT.md): each buffer at the next multiple of 64 after what
 * precedes it, the record padded to a multiple of 64. Fills offs[i] (from the record
 * start); returns the record length, or 0 when it would exceed EL_MAX_LENGTH. */
static uint64_t lay_out(const el_writer *w, uint64_t before_buffers, uint64_t *offs) {
  uint64_t pos = before_buffers;
  for (size_t i = 0; i < w->nbuf; i++) {
    pos = el_align_up(pos);
    if (pos > EL_MAX_LENGTH || w->bufs[i].length > EL_MAX_LENGTH - pos) return 0;
    if (offs) offs[i] = pos;
    pos += w->bufs[i].length;
  }
  pos = el_align_up(pos);
  return pos > EL_MAX_LENGTH ? 0 : pos;
}

static int check_serializer(el_writer *w, int serializer) {
  if (w->kind == EL_KIND_DATA && (serializer < EL_SER_PICKLE || serializer > EL_SER_DILL))
    return fail(w, EL_EINVAL, "unknown serializer %d (1 pickle, 2 cloudpickle, 3 dill)",
                (int64_t)serializer);
  if (w->kind != EL_KIND_DATA && serializer != EL_SER_NONE)
    return fail(w, EL_EINVAL,
                "a manifest or history record holds JSON: its serializer must be 0 (none), "
                "not %d",
                (int64_t)serializer);
  return EL_OK;
}

int el_writer_end_record(el_writer *w, int serializer, uint32_t stream_crc32, int flags) {
  if (!w) return EL_EINVAL;
  if (!w->open) return fail(w, EL_ESTATE, "no record is open to end");
  int rc = check_serializer(w, serializer);
  if (rc) return rc;
  const uint8_t *base = el_sink_data(w->sink);
  size_t hlen = w->stream_at - w->rec_at;
  size_t slen = el_sink_size(w->sink) - w->stream_at;
  if (w->kind != EL_KIND_DATA && el_utf8_valid_prefix(base + w->stream_at, slen, 0) != slen)
    return fail(w, EL_EINVAL, "a manifest or history record must be UTF-8 JSON");
  uint64_t table = w->nbuf ? EL_BT_SIZE(w->nbuf) : 0;
  uint64_t *offs = w->nbuf ? malloc(w->nbuf * sizeof *offs) : NULL;
  if (w->nbuf && !offs) return fail(w, EL_ENOMEM, "out of memory: could not lay out the record");
  uint64_t before = (uint64_t)hlen + slen + table;
  uint64_t rec_len = lay_out(w, before, offs);
  if (!rec_len || w->file_pos > EL_MAX_LENGTH - rec_len) {
    free(offs);
    return fail(w, EL_ENOMEM, "the checkpoint would exceed 2^53 bytes");
  }
  /* the core's bytes after the stream: table and all zero padding (buffers excluded) */
  uint64_t core_tail = rec_len - before;
  for (size_t i = 0; i < w->nbuf; i++) core_tail -= w->bufs[i].length;
  queue_compact(w);
  if (!reserve_items((void **)&w->queue, &w->qcap, w->qlen, 2 * w->nbuf + 1, sizeof *w->queue) ||
      !reserve_items((void **)&w->records, &w->rcap, w->count, 1, sizeof *w->records)) {
    free(offs);
    return fail(w, EL_ENOMEM, "out of memory: could not grow the record index");
  }
  uint8_t *t = core_tail + table ? el_sink_reserve(w->sink, (size_t)(core_tail + table)) : NULL;
  if (core_tail + table && !t) {
    free(offs);
    return sink_fail(w, EL_ENOMEM);
  }
  uint8_t *rec = (uint8_t *)el_sink_data(w->sink) + w->rec_at; /* the sink may have moved */
  if (flags & EL_END_COMPUTE_CRC) stream_crc32 = el_crc32(0, rec + hlen, slen);
  if (t) memset(t, 0, (size_t)(core_tail + table));
  for (size_t i = 0; i < w->nbuf; i++) {
    uint8_t *e = t + i * EL_BT_ENTRY;
    el_st64(e + EL_BT_OFFSET, offs[i]);
    el_st64(e + EL_BT_LENGTH, w->bufs[i].length);
    el_st32(e + EL_BT_CRC, w->bufs[i].crc);
  }
  if (w->nbuf) el_st32(t + table - 4, el_crc32c(0, t, (size_t)table - 4));
  rec[EL_R2_SERIALIZER] = (uint8_t)serializer;
  el_st32(rec + EL_R2_BUFFERS, (uint32_t)w->nbuf);
  el_st64(rec + EL_R2_STREAM_LEN, slen);
  el_st64(rec + EL_R2_BODY_LEN, rec_len - hlen);
  el_st32(rec + EL_R2_STREAM_CRC, stream_crc32);
  el_st32(rec + hlen - 4, el_crc32c(0, rec, hlen - 4));

  /* parts: core bytes up to buffer 0, buffer 0, padding, buffer 1, ..., final padding */
  uint32_t index = (uint32_t)w->count;
  uint64_t R = w->file_pos, pos = 0;
  size_t at = w->rec_at;
  for (size_t i = 0; i <= w->nbuf; i++) {
    uint64_t upto = i < w->nbuf ? offs[i] : rec_len;
    if (upto > pos) push_part(w, EL_PART_BYTES, index, 0, R + pos, upto - pos, at);
    at += (size_t)(upto - pos);
    if (i == w->nbuf) break;
    push_part(w, EL_PART_BUFFER, index, (uint32_t)i, R + offs[i], w->bufs[i].length, 0);
    pos = offs[i] + w->bufs[i].length;
  }
  free(offs);
  w->records[w->count].offset = R;
  w->records[w->count].length = rec_len;
  w->count++;
  w->file_pos += rec_len;
  w->open = 0;
  w->nbuf = 0;
  return (int)index;
}

int el_writer_add_stored_record(el_writer *w, double length) {
  if (!w) return EL_EINVAL;
  int rc = check_can_add(w);
  if (rc) return rc;
  if (!whole_length(length) || (uint64_t)length < EL_ALIGN || (uint64_t)length % EL_ALIGN)
    return fail(w, EL_EINVAL,
                "a stored record's length must be a whole multiple of 64 bytes (at least 64)");
  uint64_t len = (uint64_t)length;
  if (w->file_pos > EL_MAX_LENGTH - len)
    return fail(w, EL_ENOMEM, "the checkpoint would exceed 2^53 bytes");
  queue_compact(w);
  if (!reserve_items((void **)&w->queue, &w->qcap, w->qlen, 1, sizeof *w->queue) ||
      !reserve_items((void **)&w->records, &w->rcap, w->count, 1, sizeof *w->records))
    return fail(w, EL_ENOMEM, "out of memory: could not grow the record index");
  push_part(w, EL_PART_STORED, (uint32_t)w->count, 0, w->file_pos, len, 0);
  w->records[w->count].offset = w->file_pos;
  w->records[w->count].length = len;
  w->file_pos += len;
  return (int)w->count++;
}

int el_writer_finish(el_writer *w) {
  if (!w) return EL_EINVAL;
  if (w->finished) return fail(w, EL_ESTATE, "the checkpoint is already finished");
  if (w->open) return fail(w, EL_ESTATE, "a record is still open; end or abort it first");
  uint64_t ilen = EL_IX_SIZE(EL_IX2_ENTRY, w->count);
  if (ilen + EL_FOOTER_SIZE > SIZE_MAX / 2)
    return fail(w, EL_ENOMEM, "too many records for one index");
  queue_compact(w);
  if (!reserve_items((void **)&w->queue, &w->qcap, w->qlen, 1, sizeof *w->queue))
    return fail(w, EL_ENOMEM, "out of memory: could not queue the index");
  drop_current(w);
  compact(w);
  size_t at = el_sink_size(w->sink);
  uint8_t *ix = el_sink_reserve(w->sink, (size_t)ilen + EL_FOOTER_SIZE);
  if (!ix) return sink_fail(w, EL_ENOMEM);
  memcpy(ix, EL_IDX_MAGIC, EL_MAGIC4_LEN);
  el_st32(ix + EL_IX_COUNT, (uint32_t)w->count);
  for (size_t i = 0; i < w->count; i++) {
    uint8_t *e = ix + EL_IX_ENTRIES + EL_IX2_ENTRY * i;
    el_st64(e + EL_IX2_OFFSET, w->records[i].offset);
    el_st64(e + EL_IX2_LENGTH, w->records[i].length);
  }
  el_st32(ix + ilen - 4, el_crc32c(0, ix, (size_t)ilen - 4));
  uint8_t *f = ix + ilen;
  memcpy(f, EL_FOOTER_MAGIC, EL_MAGIC4_LEN);
  el_st32(f + EL_FT_COUNT, (uint32_t)w->count);
  el_st64(f + EL_FT_INDEX, w->file_pos);
  el_st64(f + EL_FT_SIZE, w->file_pos + ilen + EL_FOOTER_SIZE);
  el_st16(f + EL_FT_MAJOR, EL_FORMAT_MAJOR);
  el_st16(f + EL_FT_MINOR, EL_FORMAT_MINOR);
  el_st32(f + EL_FT_CRC, el_crc32c(0, f, EL_FT_CRC));
  push_part(w, EL_PART_BYTES, EL_PART_TAIL, 0, w->file_pos, ilen + EL_FOOTER_SIZE, at);
  w->file_pos += ilen + EL_FOOTER_SIZE;
  w->finished = 1;
  return EL_OK;
}

const el_part *el_writer_take(el_writer *w) {
  if (!w) return NULL;
  drop_current(w);
  if (w->qhead == w->qlen) {
    w->qhead = w->qlen = 0;
    memset(&w->current, 0, sizeof w->current);
    return &w->current;
  }
  const pending_part *p = &w->queue[w->qhead++];
  el_part *c = &w->current;
  c->kind = p->kind;
  c->record = p->record;
  c->buffer = p->buffer;
  c->reserved = 0;
  c->offset = p->offset;
  c->length = p->length;
  c->data = p->kind == EL_PART_BYTES ? (uint64_t)(uintptr_t)(el_sink_data(w->sink) + p->at) : 0;
  if (w->qhead == w->qlen) w->qhead = w->qlen = 0;
  return c;
}

size_t el_writer_take_many(el_writer *w, el_part *out, size_t n) {
  if (!w || !out) return 0;
  size_t got = 0;
  while (got < n) {
    const el_part *p = el_writer_take(w);
    if (p->kind == EL_PART_NONE) break;
    out[got++] = *p;
  }
  return got;
}
