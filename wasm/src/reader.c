/* Container reader: el_inspect lists and checks a checkpoint of format 1.x or 2.x and
 * reports what it found (report.c writes the JSON).
 *
 * Trust nothing: every length is compared with the bytes that are really there before it is
 * used, and nothing is allocated from a length read from the file without that check.
 * Records are read independently; the index (found through the footer) says where each
 * starts, and when the footer or index is damaged the reader scans from the first record
 * instead, resynchronizing on the next record header whose CRC holds (2.0 records start at
 * multiples of 64, so only those offsets are tried). */
#include <stdlib.h>

#include "layout.h"
#include "reader.h"

struct el_result {
  char *json;
  size_t len;
  int ok;
};

const char *el_result_json(const el_result *r) { return r ? r->json : "null"; }
size_t el_result_json_len(const el_result *r) { return r ? r->len : 4; }
int el_result_ok(const el_result *r) { return r ? r->ok : 0; }
void el_result_free(el_result *r) {
  if (!r) return;
  free(r->json);
  free(r);
}

static el_result *make_result(el_buf *b, int ok) {
  el_result *r = b->failed ? NULL : malloc(sizeof *r);
  if (!r) {
    el_buf_free(b);
    el_set_last_error("out of memory while writing the report");
    return NULL;
  }
  r->json = b->data;
  r->len = b->len;
  r->ok = ok;
  return r;
}

el_result *el_validate_pickle(const uint8_t *buf, size_t len) {
  el_pickle_report pr;
  el_pickle_validate(buf, len, &pr);
  el_buf b = {0};
  el_buf_puts(&b, pr.ok ? "{\"ok\":true,\"error\":" : "{\"ok\":false,\"error\":");
  if (pr.ok)
    el_buf_puts(&b, "null");
  else
    el_error_json(&b, pr.nomem ? EL_CODE_NOMEM : EL_CODE_PICKLE, pr.message, pr.offset, -1,
                  pr.opcode);
  el_buf_puts(&b, ",\"globals\":");
  el_pickle_globals_json(&b, &pr);
  el_buf_puts(&b, ",\"protocol\":");
  el_buf_u64(&b, (uint64_t)pr.protocol);
  el_buf_puts(&b, ",\"buffers\":");
  el_buf_u64(&b, pr.buffers_used);
  el_buf_puts(&b, ",\"size\":");
  el_buf_u64(&b, len);
  el_buf_puts(&b, "}");
  el_pickle_report_free(&pr);
  return make_result(&b, pr.ok);
}

/* ---- inspection state ------------------------------------------------------------------ */

typedef struct {
  const uint8_t *p;
  size_t n;
  int flags;
  unsigned version; /* layout the records are read with: 1 or 2 */
  el_file_info file;
  el_problem err; /* the file-level error: the first problem found */
  int ok;
  el_buf recs; /* the "records" array's items */
  size_t nrecs;
} insp;

static int has_magic4(const insp *x, size_t off, const char *m) {
  return off <= x->n && x->n - off >= EL_MAGIC4_LEN && !memcmp(x->p + off, m, EL_MAGIC4_LEN);
}

static int all_zero(const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static uint32_t min_header(unsigned version) { return version == 1 ? EL_R1_MIN : EL_R2_MIN; }

/* Whether a record header with a valid CRC starts at off (used to resynchronize). */
static int header_valid_at(const insp *x, size_t off, size_t end) {
  uint32_t min = min_header(x->version);
  if (off > end || end - off < min || memcmp(x->p + off, EL_REC_MAGIC, EL_MAGIC4_LEN)) return 0;
  uint32_t hlen = el_ld32(x->p + off + EL_R1_LENGTH); /* same place in both versions */
  return hlen >= min && hlen <= end - off &&
         el_crc32c(0, x->p + off, hlen - 4) == el_ld32(x->p + off + hlen - 4);
}

/* Next offset >= from (and < end) where a valid record header starts, or end. */
static size_t resync(const insp *x, size_t from, size_t end) {
  if (x->version == 2) {
    for (uint64_t at = el_align_up(from); at < end; at += EL_ALIGN)
      if (header_valid_at(x, (size_t)at, end)) return (size_t)at;
    return end;
  }
  while (from < end && end - from >= EL_MAGIC4_LEN) {
    const uint8_t *e = memchr(x->p + from, EL_REC_MAGIC[0], end - from - 3);
    if (!e) break;
    size_t at = (size_t)(e - x->p);
    if (header_valid_at(x, at, end)) return at;
    from = at + 1;
  }
  return end;
}

/* ---- one record -------------------------------------------------------------------------- */

typedef enum { REC_GOOD, REC_BAD_PAYLOAD, REC_BAD_HEADER } rec_status;

#define REC_FAIL(code, at, ...) \
  el_problem_set(&r->error, code, at, r->index, NULL, __VA_ARGS__)

/* Magic, header length, header CRC and the fields of a header of either version. */
static int read_header(insp *x, el_rec_info *r, size_t avail) {
  const uint8_t *h = x->p + r->offset;
  uint32_t min = min_header(x->version);
  if (avail < min) {
    REC_FAIL(EL_CODE_TRUNCATED, r->offset,
             "record %d at offset %u: header truncated (%u bytes left)", r->index, r->offset,
             (uint64_t)avail);
    return 0;
  }
  if (memcmp(h, EL_REC_MAGIC, EL_MAGIC4_LEN)) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: no record magic (damaged or misplaced)", r->index,
             r->offset);
    return 0;
  }
  uint32_t hlen = el_ld32(h + EL_R1_LENGTH);
  if (hlen < min || hlen > avail) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: header length %u is out of range (damaged header)",
             r->index, r->offset, (uint64_t)hlen);
    return 0;
  }
  uint32_t stored = el_ld32(h + hlen - 4), got = el_crc32c(0, h, hlen - 4);
  if (stored != got) {
    REC_FAIL(EL_CODE_CHECKSUM, r->offset,
             "record %d at offset %u: header checksum mismatch (stored %x, computed %x): the "
             "record header is corrupted",
             r->index, r->offset, stored, got);
    return 0;
  }
  el_rec_header *rh = &r->h;
  rh->version = x->version;
  rh->header_len = hlen;
  uint32_t names_at;
  if (x->version == 1) {
    rh->kind = EL_KIND_DATA;
    rh->serializer = h[EL_R1_SERIALIZER];
    rh->stored_index = el_ld32(h + EL_R1_INDEX);
    rh->stream_len = el_ld64(h + EL_R1_PAYLOAD_LEN);
    rh->record_len = rh->stream_len > UINT64_MAX - hlen ? UINT64_MAX : hlen + rh->stream_len;
    rh->stream_crc = el_ld32(h + EL_R1_PAYLOAD_CRC);
    rh->names_len = el_ld32(h + EL_R1_NAMES_LEN);
    names_at = EL_R1_NAMES;
  } else {
    rh->kind = h[EL_R2_KIND];
    rh->serializer = h[EL_R2_SERIALIZER];
    rh->nbuffers = el_ld32(h + EL_R2_BUFFERS);
    rh->stream_len = el_ld64(h + EL_R2_STREAM_LEN);
    uint64_t body = el_ld64(h + EL_R2_BODY_LEN);
    rh->record_len = body > UINT64_MAX - hlen ? UINT64_MAX : hlen + body;
    rh->stream_crc = el_ld32(h + EL_R2_STREAM_CRC);
    rh->names_len = el_ld32(h + EL_R2_NAMES_LEN);
    names_at = EL_R2_NAMES;
  }
  if (rh->names_len > hlen - names_at - 4) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: names length %u exceeds the header", r->index, r->offset,
             (uint64_t)rh->names_len);
    return 0;
  }
  rh->names = h + names_at;
  r->header_ok = 1;
  return 1;
}

/* The record's extent: within the bytes available, and (2.0) a multiple of 64 that matches
 * the index. 0 when the record's end is unknown or beyond the available bytes. */
static int check_extent(insp *x, el_rec_info *r, size_t avail, uint64_t indexed_len) {
  const el_rec_header *h = &r->h;
  int64_t shown = x->version == 1 ? (int64_t)h->stored_index : r->index;
  if (h->record_len > avail) {
    uint64_t pay = r->offset + h->header_len;
    if (x->version == 1)
      REC_FAIL(EL_CODE_TRUNCATED, pay,
               "record %d at offset %u: payload of %u bytes at offset %u runs past the end of "
               "the records (%u bytes left): the file is truncated",
               shown, r->offset, h->stream_len, pay, (uint64_t)(avail - h->header_len));
    else
      REC_FAIL(EL_CODE_TRUNCATED, pay,
               "record %d at offset %u: record of %u bytes runs past the end of the records "
               "(%u bytes left): the file is truncated",
               shown, r->offset, h->record_len, (uint64_t)avail);
    return 0;
  }
  if (x->version == 2 && h->record_len % EL_ALIGN) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: record length %u is not a multiple of 64 (damaged)",
             r->index, r->offset, h->record_len);
    return 0;
  }
  if (x->version == 2 && indexed_len && h->record_len != indexed_len) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: header says %u bytes, the index %u", r->index, r->offset,
             h->record_len, indexed_len);
    return 0;
  }
  return 1;
}

/* 2.0: reads the buffer table and checks that the stream, the table and every buffer sit
 * exactly where the layout rules put them (FORMAT.md), so every byte of the record is either
 * covered by a CRC or zero padding. */
static int read_layout(insp *x, el_rec_info *r) {
  const el_rec_header *h = &r->h;
  uint64_t len = h->record_len, pos = h->header_len;
  uint32_t m = h->nbuffers;
  if (h->stream_len > len - pos) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: stream of %u bytes runs past the record (%u bytes)",
             r->index, r->offset, h->stream_len, len);
    return 0;
  }
  pos += h->stream_len;
  if (!m) {
    if (el_align_up(pos) == len) return 1;
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: record length %u does not match its stream (expected %u)",
             r->index, r->offset, len, el_align_up(pos));
    return 0;
  }
  uint64_t tsize = EL_BT_SIZE(m);
  if (m > EL_MAX_BUFFERS || tsize > len - pos) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset + pos,
             "record %d at offset %u: buffer table of %u entries runs past the record",
             r->index, r->offset, (uint64_t)m);
    return 0;
  }
  const uint8_t *t = x->p + r->offset + pos;
  uint32_t stored = el_ld32(t + tsize - 4), got = el_crc32c(0, t, (size_t)tsize - 4);
  if (stored != got) {
    REC_FAIL(EL_CODE_CHECKSUM, r->offset + pos,
             "record %d at offset %u: buffer table checksum mismatch (stored %x, computed %x)",
             r->index, r->offset, stored, got);
    return 0;
  }
  r->buffers = malloc(m * sizeof *r->buffers);
  if (!r->buffers) {
    REC_FAIL(EL_CODE_NOMEM, r->offset, "out of memory reading record %d's buffer table",
             r->index);
    return 0;
  }
  pos += tsize;
  for (uint32_t i = 0; i < m; i++) {
    el_buffer_entry *e = &r->buffers[i];
    const uint8_t *te = t + (size_t)i * EL_BT_ENTRY;
    e->offset = el_ld64(te + EL_BT_OFFSET);
    e->length = el_ld64(te + EL_BT_LENGTH);
    e->crc = el_ld32(te + EL_BT_CRC);
    e->checked = -1;
    pos = el_align_up(pos);
    if (e->offset != pos || e->length > len - pos) {
      REC_FAIL(EL_CODE_STRUCTURE, r->offset + e->offset,
               "record %d at offset %u: buffer %u (offset %u, %u bytes) is not where the "
               "layout puts it (offset %u, within %u bytes)",
               r->index, r->offset, (uint64_t)i, e->offset, e->length, pos, len);
      return 0;
    }
    pos += e->length;
  }
  if (el_align_up(pos) != len) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: record length %u does not match its buffers (expected %u)",
             r->index, r->offset, len, el_align_up(pos));
    return 0;
  }
  return 1;
}

static int check_kind(insp *x, el_rec_info *r) {
  const el_rec_header *h = &r->h;
  int64_t shown = x->version == 1 ? (int64_t)h->stored_index : r->index;
  if (h->kind == 0) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset, "record %d at offset %u: record kind 0 does not exist",
             shown, r->offset);
    return 0;
  }
  if (!el_kind_name(h->kind)) {
    REC_FAIL(EL_CODE_UNKNOWN_KIND, r->offset,
             "record %d at offset %u: record kind %u is not readable by this version "
             "(written by a newer elastic-lite?)",
             shown, r->offset, (uint64_t)h->kind);
    return 0;
  }
  if (h->kind == EL_KIND_DATA && !el_serializer_name(h->serializer)) {
    REC_FAIL(EL_CODE_UNKNOWN_SERIALIZER, r->offset,
             "record %d at offset %u: unknown serializer code %u (written by a newer "
             "elastic-lite?)",
             shown, r->offset, (uint64_t)h->serializer);
    return 0;
  }
  if (h->kind != EL_KIND_DATA && (h->serializer != EL_SER_NONE || h->nbuffers)) {
    REC_FAIL(EL_CODE_STRUCTURE, r->offset,
             "record %d at offset %u: a %s record has no serializer and no buffers", shown,
             r->offset, el_kind_name(h->kind));
    return 0;
  }
  return 1;
}

/* Stream CRC, zero padding and buffer CRCs (every byte of a 2.0 record is covered). */
static int check_content(insp *x, el_rec_info *r) {
  const el_rec_header *h = &r->h;
  const uint8_t *rec = x->p + r->offset;
  const uint8_t *s = rec + h->header_len;
  uint64_t send = h->header_len + h->stream_len;
  uint32_t got = x->version == 1 ? el_crc32c(0, s, (size_t)h->stream_len)
                                  : el_crc32(0, s, (size_t)h->stream_len);
  if (got != h->stream_crc) {
    int64_t shown = x->version == 1 ? (int64_t)h->stored_index : r->index;
    REC_FAIL(EL_CODE_CHECKSUM, r->offset + h->header_len,
             "record %d at offset %u: payload checksum mismatch (stored %x, computed %x): the "
             "payload at offset %u is corrupted",
             shown, r->offset, h->stream_crc, got, r->offset + h->header_len);
    return 0;
  }
  if (x->version == 1) return 1;
  uint64_t pad_from = send + (h->nbuffers ? EL_BT_SIZE(h->nbuffers) : 0);
  for (uint32_t i = 0; i <= h->nbuffers; i++) {
    uint64_t pad_to = i < h->nbuffers ? r->buffers[i].offset : h->record_len;
    if (!all_zero(rec + pad_from, pad_to - pad_from)) {
      REC_FAIL(EL_CODE_STRUCTURE, r->offset + pad_from,
               "record %d at offset %u: padding at offset %u is not zero (damaged)", r->index,
               r->offset, r->offset + pad_from);
      return 0;
    }
    if (i == h->nbuffers) break;
    el_buffer_entry *e = &r->buffers[i];
    uint32_t c = el_crc32(0, rec + e->offset, (size_t)e->length);
    e->checked = c == e->crc;
    if (!e->checked) {
      REC_FAIL(EL_CODE_CHECKSUM, r->offset + e->offset,
               "record %d at offset %u: buffer %u checksum mismatch (stored %x, computed %x): "
               "the buffer at offset %u is corrupted",
               r->index, r->offset, (uint64_t)i, e->crc, c, r->offset + e->offset);
      return 0;
    }
    pad_from = e->offset + e->length;
  }
  return 1;
}

/* Pickle stream validation (data) or UTF-8 check (the JSON kinds). */
static void validate_stream(insp *x, el_rec_info *r) {
  const el_rec_header *h = &r->h;
  const uint8_t *s = x->p + r->offset + h->header_len;
  uint64_t at = r->offset + h->header_len;
  int64_t shown = x->version == 1 ? (int64_t)h->stored_index : r->index;
  if (h->kind != EL_KIND_DATA) {
    size_t ok = el_utf8_valid_prefix(s, (size_t)h->stream_len, 0);
    if (ok != h->stream_len)
      REC_FAIL(EL_CODE_STRUCTURE, at + ok,
               "record %d at offset %u: %s is not UTF-8 (bad byte at offset %u)", shown,
               r->offset, el_kind_name(h->kind), at + ok);
    return;
  }
  el_pickle_validate(s, (size_t)h->stream_len, &r->pickle);
  r->validated = 1;
  const el_pickle_report *pr = &r->pickle;
  if (!pr->ok) {
    el_problem_set(&r->error, pr->nomem ? EL_CODE_NOMEM : EL_CODE_PICKLE, at + pr->offset,
                   shown, pr->opcode, "record %d at offset %u: pickle stream rejected: %s",
                   shown, r->offset, pr->message);
  } else if (pr->buffers_used != h->nbuffers) {
    el_problem_set(&r->error, EL_CODE_PICKLE, at, shown, "NEXT_BUFFER",
                   "record %d at offset %u: the pickle stream uses %u out-of-band buffers but "
                   "the record holds %u",
                   shown, r->offset, pr->buffers_used, (uint64_t)h->nbuffers);
  }
}

/* Reads the record at off (bytes up to limit belong to records; indexed_len: its length in
 * the 2.0 index, 0 when scanning). Emits its report item. *next is where the following
 * record starts when the header was good. */
static rec_status read_record(insp *x, size_t off, size_t limit, int64_t pos_index,
                              uint64_t indexed_len, int check_index, size_t *next) {
  el_rec_info R;
  memset(&R, 0, sizeof R);
  el_rec_info *r = &R;
  r->index = pos_index;
  r->offset = off;
  size_t avail = off <= limit ? limit - off : 0;
  rec_status st = REC_GOOD;
  if (!read_header(x, r, avail)) {
    st = REC_BAD_HEADER;
  } else if (!check_extent(x, r, avail, indexed_len)) {
    st = REC_BAD_PAYLOAD;
    *next = r->h.record_len <= avail ? off + (size_t)r->h.record_len : limit;
  } else {
    *next = off + (size_t)r->h.record_len;
    if (x->version == 1 && check_index && r->h.stored_index != (uint64_t)pos_index)
      REC_FAIL(EL_CODE_STRUCTURE, off, "record %d at offset %u: header says it is record %u",
               pos_index, (uint64_t)off, (uint64_t)r->h.stored_index);
    else if ((x->version == 1 || read_layout(x, r)) && check_kind(x, r) &&
             !(x->flags & EL_INSPECT_HEADERS_ONLY) && check_content(x, r) &&
             (x->flags & EL_INSPECT_VALIDATE))
      validate_stream(x, r);
    if (r->error.set) st = REC_BAD_PAYLOAD;
  }
  if (x->version == 1 && r->header_ok) r->index = (int64_t)r->h.stored_index;
  if (r->error.set) r->error.record = r->index;
  el_report_record(&x->recs, r, x->nrecs++ == 0);
  if (r->error.set) {
    x->ok = 0;
    if (!x->err.set) x->err = r->error;
  }
  if (r->validated) el_pickle_report_free(&r->pickle);
  free(r->buffers);
  return st;
}

#undef REC_FAIL

/* Lists records by scanning [from, end). */
static void scan_records(insp *x, size_t from, size_t end) {
  size_t pos = from;
  int64_t i = 0;
  while (pos < end) {
    if (!has_magic4(x, pos, EL_REC_MAGIC)) {
      if (has_magic4(x, pos, EL_IDX_MAGIC)) break; /* reached the index */
      size_t at = resync(x, pos, end);
      x->ok = 0;
      el_problem_set(&x->err, EL_CODE_STRUCTURE, pos, -1, NULL,
                     "%u bytes at offset %u are not a record (damaged or truncated data)",
                     (uint64_t)(at - pos), (uint64_t)pos);
      pos = at;
      continue;
    }
    size_t next = pos;
    rec_status st = read_record(x, pos, end, i++, 0, 0, &next);
    pos = st == REC_BAD_HEADER ? resync(x, pos + 1, end) : next; /* length unknown: resync */
  }
}

/* ---- footer and index ---------------------------------------------------------------------- */

/* A problem of the file as a whole (header, footer, index); suffix is appended. */
static void file_problem(insp *x, const char *code, uint64_t off, const char *suffix,
                         const char *fmt, ...) {
  x->ok = 0;
  if (x->err.set) return;
  va_list ap;
  va_start(ap, fmt);
  char msg[EL_ERRMSG];
  el_vfmt(msg, sizeof msg, fmt, ap);
  va_end(ap);
  el_problem_set(&x->err, code, off, -1, NULL, "%s%s", msg, suffix);
}

#define SCANNED "; records were found by scanning"
#define index_problem(x, code, off, ...) file_problem(x, code, off, SCANNED, __VA_ARGS__)
#define header_problem(x, code, off, ...) file_problem(x, code, off, "", __VA_ARGS__)

/* Checks the index entries: 1.0 strictly increasing offsets, 2.0 contiguous records from the
 * first record to the index. Fills offs/lens (lens 0 in 1.0). */
static int read_index_entries(insp *x, const uint8_t *ip, size_t records_from, uint64_t ix,
                              uint32_t cnt, uint64_t *offs, uint64_t *lens) {
  uint64_t prev = records_from;
  for (uint32_t i = 0; i < cnt; i++) {
    if (x->version == 1) {
      offs[i] = el_ld64(ip + EL_IX_ENTRIES + EL_IX1_ENTRY * (size_t)i);
      lens[i] = 0;
      if (offs[i] < prev || offs[i] >= ix) {
        index_problem(x, EL_CODE_STRUCTURE, ix,
                      "index at offset %u lists record %u at impossible offset %u", ix,
                      (uint64_t)i, offs[i]);
        return 0;
      }
      prev = offs[i] + 1;
      continue;
    }
    const uint8_t *e = ip + EL_IX_ENTRIES + EL_IX2_ENTRY * (size_t)i;
    offs[i] = el_ld64(e + EL_IX2_OFFSET);
    lens[i] = el_ld64(e + EL_IX2_LENGTH);
    if (offs[i] != prev || lens[i] < EL_ALIGN || lens[i] % EL_ALIGN || lens[i] > ix - prev) {
      index_problem(x, EL_CODE_STRUCTURE, ix,
                    "index at offset %u lists record %u at impossible offset %u (length %u)", ix,
                    (uint64_t)i, offs[i], lens[i]);
      return 0;
    }
    prev = offs[i] + lens[i];
  }
  if (x->version == 2 && prev != ix) {
    index_problem(x, EL_CODE_STRUCTURE, ix,
                  "index at offset %u: its records end at offset %u, not where the index starts",
                  ix, prev);
    return 0;
  }
  return 1;
}

/* Reads the footer and the index; on success fills offs/lens (malloc'ed) and returns 1.
 * *index_at bounds the records either way (the file size when the footer is unusable). */
static int read_index(insp *x, size_t records_from, size_t *index_at, uint64_t **offs,
                      uint64_t **lens, uint32_t *count) {
  const uint8_t *p = x->p;
  size_t n = x->n;
  *index_at = n;
  if (n < records_from || n - records_from < EL_IX_SIZE(0, 0) + EL_FOOTER_SIZE) {
    index_problem(x, EL_CODE_TRUNCATED, n,
                  "file ends at offset %u before its footer: the file is truncated", (uint64_t)n);
    return 0;
  }
  size_t foff = n - EL_FOOTER_SIZE;
  const uint8_t *f = p + foff;
  if (memcmp(f, EL_FOOTER_MAGIC, EL_MAGIC4_LEN) || el_crc32c(0, f, EL_FT_CRC) != el_ld32(f + EL_FT_CRC)) {
    index_problem(x, EL_CODE_TRUNCATED, foff,
                  "no valid footer at offset %u: the file is truncated or the footer is "
                  "corrupted",
                  (uint64_t)foff);
    return 0;
  }
  uint32_t cnt = el_ld32(f + EL_FT_COUNT);
  uint64_t ix = el_ld64(f + EL_FT_INDEX), size = el_ld64(f + EL_FT_SIZE);
  unsigned major = el_ld16(f + EL_FT_MAJOR);
  if (size != n) {
    index_problem(x, EL_CODE_TRUNCATED, foff,
                  "footer says the file has %u bytes but it has %u: truncated or extended", size,
                  (uint64_t)n);
    return 0;
  }
  if (major != x->version) {
    index_problem(x, EL_CODE_STRUCTURE, foff,
                  "footer at offset %u says format %u, the header %u", (uint64_t)foff,
                  (uint64_t)major, (uint64_t)x->version);
    return 0;
  }
  uint64_t entry = x->version == 1 ? EL_IX1_ENTRY : EL_IX2_ENTRY;
  if (ix < records_from || ix > foff || foff - ix != EL_IX_SIZE(entry, cnt)) {
    index_problem(x, EL_CODE_STRUCTURE, foff,
                  "footer at offset %u points to an impossible index (offset %u, %u records)",
                  (uint64_t)foff, ix, (uint64_t)cnt);
    return 0;
  }
  *index_at = (size_t)ix;
  x->file.has_index = 1;
  x->file.index_offset = ix;
  const uint8_t *ip = p + ix;
  size_t ilen = foff - (size_t)ix;
  if (memcmp(ip, EL_IDX_MAGIC, EL_MAGIC4_LEN) || el_ld32(ip + EL_IX_COUNT) != cnt ||
      el_crc32c(0, ip, ilen - 4) != el_ld32(ip + ilen - 4)) {
    index_problem(x, EL_CODE_CHECKSUM, ix, "index at offset %u is corrupted", ix);
    return 0;
  }
  /* cnt is bounded by the file size (checked above), so these allocations are too */
  uint64_t *o = malloc((cnt ? cnt : 1) * sizeof *o), *l = malloc((cnt ? cnt : 1) * sizeof *l);
  if (!o || !l) {
    free(o);
    free(l);
    index_problem(x, EL_CODE_NOMEM, ix, "out of memory reading the index");
    return 0;
  }
  if (!read_index_entries(x, ip, records_from, ix, cnt, o, l)) {
    free(o);
    free(l);
    return 0;
  }
  *offs = o;
  *lens = l;
  *count = cnt;
  return 1;
}

/* ---- file header ---------------------------------------------------------------------------- */

/* A footer with a valid CRC and a major this reader knows: its major, else 0. */
static unsigned footer_major(const insp *x) {
  if (x->n < EL_FOOTER_SIZE) return 0;
  const uint8_t *f = x->p + x->n - EL_FOOTER_SIZE;
  if (memcmp(f, EL_FOOTER_MAGIC, EL_MAGIC4_LEN) || el_crc32c(0, f, EL_FT_CRC) != el_ld32(f + EL_FT_CRC))
    return 0;
  unsigned m = el_ld16(f + EL_FT_MAJOR);
  return m >= EL_FORMAT_OLDEST_MAJOR && m <= EL_FORMAT_MAJOR ? m : 0;
}

/* Reads the file header and decides the layout version. Returns where records start, or 0
 * when nothing more can be read (not a checkpoint, a newer format, ...). */
static size_t read_file_header(insp *x) {
  const uint8_t *p = x->p;
  size_t n = x->n;
  el_file_info *fi = &x->file;
  unsigned fmajor = footer_major(x);
  if (n < EL_MAGIC_LEN || memcmp(p + EL_FH_MAGIC, EL_MAGIC, EL_MAGIC_LEN)) {
    if (!fmajor) {
      header_problem(x, EL_CODE_NOT_CHECKPOINT, 0,
                     n < EL_MAGIC_LEN ? "not an Elastic Lite checkpoint: only %u bytes"
                                      : "not an Elastic Lite checkpoint (no checkpoint magic at "
                                        "offset 0; %u bytes)",
                     (uint64_t)n);
      return 0;
    }
    header_problem(x, EL_CODE_STRUCTURE, 0, "file header at offset 0 is corrupted (bad magic)");
    x->version = fmajor;
    return fmajor == 1 ? EL_MAGIC_LEN : EL_ALIGN;
  }
  if (n < EL_FH_MIN) {
    header_problem(x, EL_CODE_TRUNCATED, n, "file is truncated inside its header (%u bytes)",
                   (uint64_t)n);
    return 0;
  }
  unsigned major = el_ld16(p + EL_FH_MAJOR), minor = el_ld16(p + EL_FH_MINOR);
  uint32_t hlen = el_ld32(p + EL_FH_LENGTH);
  int crc_ok = hlen >= EL_FH_MIN && hlen <= n && el_crc32c(0, p, hlen - 4) == el_ld32(p + hlen - 4);
  if (major > EL_FORMAT_MAJOR && !(fmajor && !crc_ok)) {
    header_problem(x, EL_CODE_NEWER, EL_FH_MAJOR,
                   "checkpoint format %u is newer than this reader supports (%u); upgrade "
                   "elastic-lite",
                   (uint64_t)major, (uint64_t)EL_FORMAT_MAJOR);
    fi->newer = 1;
    fi->major = major;
    fi->minor = minor;
    return 0;
  }
  if (!crc_ok) {
    header_problem(x, hlen > n ? EL_CODE_TRUNCATED : EL_CODE_CHECKSUM, 0,
                   hlen > n ? "file header at offset 0 is truncated or corrupted (header length "
                              "%u, file %u bytes)"
                            : "file header at offset 0 is corrupted (checksum mismatch; header "
                              "length %u, file %u bytes)",
                   (uint64_t)hlen, (uint64_t)n);
    x->version = fmajor ? fmajor : major == 1 ? 1 : 2;
    return x->version == 1 ? EL_MAGIC_LEN : EL_ALIGN;
  }
  if (major < EL_FORMAT_OLDEST_MAJOR) {
    header_problem(x, EL_CODE_STRUCTURE, EL_FH_MAJOR,
                   "checkpoint format %u does not exist (corrupted header?)", (uint64_t)major);
    return 0;
  }
  x->version = major;
  size_t pl = el_ld16(p + EL_FH_PRODUCER_LEN), ql = el_ld16(p + EL_FH_PYTHON_LEN);
  if (pl + ql > hlen - EL_FH_MIN) {
    header_problem(x, EL_CODE_STRUCTURE, EL_FH_PRODUCER_LEN,
                   "file header strings overflow the header (corrupted)");
    return major == 1 ? EL_MAGIC_LEN : EL_ALIGN;
  }
  if (major == 2 && hlen % EL_ALIGN)
    header_problem(x, EL_CODE_STRUCTURE, EL_FH_LENGTH,
                   "file header length %u is not a multiple of 64 (damaged)", (uint64_t)hlen);
  fi->header_ok = 1;
  fi->major = major;
  fi->minor = minor;
  fi->created_ms = (int64_t)el_ld64(p + EL_FH_CREATED);
  fi->producer = p + EL_FH_STRINGS;
  fi->producer_len = pl;
  fi->python = p + EL_FH_STRINGS + pl;
  fi->python_len = ql;
  return hlen;
}

el_result *el_inspect(const uint8_t *buf, size_t len, int flags) {
  insp X;
  memset(&X, 0, sizeof X);
  insp *x = &X;
  x->p = buf;
  x->n = buf ? len : 0;
  x->flags = flags;
  x->ok = 1;
  x->file.size = x->n;
  size_t records_from = read_file_header(x);
  if (records_from) {
    size_t index_at;
    uint64_t *offs = NULL, *lens = NULL;
    uint32_t cnt = 0;
    if (read_index(x, records_from, &index_at, &offs, &lens, &cnt)) {
      for (uint32_t i = 0; i < cnt; i++) {
        size_t next, limit;
        if (x->version == 1)
          limit = i + 1 < cnt ? (size_t)offs[i + 1] : index_at;
        else
          limit = (size_t)(offs[i] + lens[i]);
        read_record(x, (size_t)offs[i], limit, (int64_t)i, lens[i], 1, &next);
      }
      free(offs);
      free(lens);
    } else {
      scan_records(x, records_from, index_at); /* an intact index position still bounds them */
    }
  }
  el_buf b = {0};
  el_report_file(&b, x->ok, &x->file, &x->err, &x->recs);
  el_buf_free(&x->recs);
  return make_result(&b, x->ok);
}
