/* Container reader, pull style: el_reader says which byte range of the file it needs next
 * (footer, header, index, record headers, buffer tables, padding, pickle streams in
 * windows) or which content CRC it needs computed, and the caller feeds it from wherever the
 * bytes are. Nothing is ever asked twice for the whole file, and the bytes of out-of-band
 * buffers never enter the reader (their CRC-32 is asked for; with EL_READ_CORE_CRC the
 * reader reads them in chunks and computes it itself). el_inspect is a loop over this reader
 * (inspect.c); report.c writes what it finds as JSON.
 *
 * Trust nothing: every length is compared with the bytes that are really there before it is
 * used, and nothing is allocated from a length read from the file without that check.
 * Records are read independently; the index (found through the footer) says where each
 * starts, and when the footer or index is damaged the reader scans from the first record
 * instead, resynchronizing on the next record header whose CRC holds (2.0 records start at
 * multiples of 64, so only those offsets are tried).
 *
 * Shape of the code: one stage per answer the reader waits for. A stage handler gets the
 * bytes (or CRC) it asked for, does its checks, and either asks for the next range or moves
 * to a stage that needs nothing (drive() runs those in a loop, so a file of a million tiny
 * records needs no deep call stack). */
#include <stdlib.h>

#include "layout.h"
#include "reader.h"

#define MAX_HEADER ((uint64_t)1 << 20) /* a file header this long is damage, not strings */

typedef enum {
  S_FOOTER, S_HEAD_BEGIN, S_HEAD_FIXED, S_HEAD, S_INDEX_BEGIN, S_INDEX, S_NEXT_RECORD,
  S_REC_BEGIN, S_REC_FIXED, S_REC_HEAD, S_REC_TABLE, S_REC_KIND, S_REC_STREAM_CRC, S_REC_PAD,
  S_REC_PAD_CHECK, S_REC_BUFFER_CRC, S_REC_VALIDATE, S_REC_PICKLE, S_REC_UTF8, S_REC_END,
  S_CRC_BYTES, S_SCAN_NEXT, S_SCAN_MAGIC, S_SCAN_RESYNCED, S_RESYNC, S_RESYNC_CHUNK,
  S_RESYNC_CANDIDATE, S_DONE
} stage;

typedef enum { REC_GOOD, REC_BAD_PAYLOAD, REC_BAD_HEADER } rec_status;

struct el_reader {
  uint64_t size, chunk;
  int flags;
  stage st;
  int want; /* EL_NEED_* the caller must answer, or EL_NEED_DONE while running */
  uint64_t want_off, want_len;
  uint32_t answered_crc;
  unsigned version; /* layout the records are read with: 1 or 2 */
  el_file_info file;
  el_problem err; /* the file-level error: the first problem found */
  int ok;
  el_buf recs; /* the "records" array's items */
  size_t nrecs;
  char misuse[EL_ERRMSG];
  /* footer, as read first */
  int footer_valid;
  unsigned footer_major, footer_raw_major; /* major if this reader knows it (else 0); as read */
  uint32_t footer_count;
  uint64_t footer_index, footer_size;
  /* header */
  unsigned hmajor, hminor;
  uint32_t hlen;
  uint8_t *strings; /* producer and python, copied */
  uint64_t records_from, index_at;
  /* records by the index */
  uint64_t *offs, *lens;
  uint32_t count, next_i;
  /* records by scanning */
  int scanning, scan_garbage; /* garbage: the bytes at scan_pos are not a record */
  uint64_t scan_pos, scan_end;
  int64_t scan_i;
  /* the record being read */
  el_rec_info rec;
  uint8_t *rec_header; /* a copy of its header: the report's names point into it */
  uint64_t rec_avail, rec_indexed_len, rec_next;
  int rec_check_index;
  rec_status rec_st;
  uint32_t buf_i;
  uint64_t pad_from, utf8_pos;
  el_pv *pv;
  /* a content CRC being computed from bytes (EL_READ_CORE_CRC, or CRC32C of a 1.0 payload) */
  int crc_is_32c;
  uint64_t crc_pos, crc_end;
  uint32_t crc_run, crc_result;
  stage crc_then;
  /* resynchronization */
  uint64_t rs_from, rs_end, rs_at;
  stage rs_then;
};

/* ---- requests ---------------------------------------------------------------------------- */

static void ask(el_reader *r, stage next, int kind, uint64_t off, uint64_t len) {
  r->st = next;
  r->want = kind;
  r->want_off = off;
  r->want_len = len;
}

static void go(el_reader *r, stage next) {
  r->st = next;
  r->want = EL_NEED_DONE;
}

/* Bytes [off, off+len) within the file, len > 0 (callers guarantee both). */
static void ask_bytes(el_reader *r, stage next, uint64_t off, uint64_t len) {
  ask(r, next, EL_NEED_BYTES, off, len);
}

/* The content CRC of [off, off+len) into r->crc_result, then stage `then`: CRC-32 asked of
 * the caller, or computed here from the bytes (CRC32C of 1.0 payloads; EL_READ_CORE_CRC). */
static void crc_range(el_reader *r, int is_32c, uint64_t off, uint64_t len, stage then) {
  r->crc_is_32c = is_32c;
  r->crc_then = then;
  if (!is_32c && !(r->flags & EL_READ_CORE_CRC) && len) {
    ask(r, S_CRC_BYTES, EL_NEED_CRC32, off, len);
    return;
  }
  r->crc_pos = off;
  r->crc_end = off + len;
  r->crc_run = 0;
  if (!len) {
    r->crc_result = 0;
    go(r, then);
    return;
  }
  ask_bytes(r, S_CRC_BYTES, off, len < r->chunk ? len : r->chunk);
}

static void st_crc_bytes(el_reader *r, const uint8_t *p, size_t n) {
  if (r->want == EL_NEED_CRC32) { /* the caller's answer */
    r->crc_result = r->answered_crc;
    go(r, r->crc_then);
    return;
  }
  r->crc_run = r->crc_is_32c ? el_crc32c(r->crc_run, p, n) : el_crc32(r->crc_run, p, n);
  r->crc_pos += n;
  if (r->crc_pos < r->crc_end) {
    uint64_t left = r->crc_end - r->crc_pos;
    ask_bytes(r, S_CRC_BYTES, r->crc_pos, left < r->chunk ? left : r->chunk);
    return;
  }
  r->crc_result = r->crc_run;
  go(r, r->crc_then);
}

/* ---- problems -------------------------------------------------------------------------- */

static void file_problem(el_reader *r, const char *code, uint64_t off, const char *suffix,
                         const char *fmt, ...) {
  r->ok = 0;
  if (r->err.set) return;
  va_list ap;
  va_start(ap, fmt);
  char msg[EL_ERRMSG];
  el_vfmt(msg, sizeof msg, fmt, ap);
  va_end(ap);
  el_problem_set(&r->err, code, off, -1, NULL, "%s%s", msg, suffix);
}

#define SCANNED "; records were found by scanning"
#define index_problem(r, code, off, ...) file_problem(r, code, off, SCANNED, __VA_ARGS__)
#define header_problem(r, code, off, ...) file_problem(r, code, off, "", __VA_ARGS__)

/* A problem of the record being read (the first one counts). */
#define REC_FAIL(r, code, at, ...) \
  el_problem_set(&(r)->rec.error, code, at, (r)->rec.index, NULL, __VA_ARGS__)

static int all_zero(const uint8_t *p, uint64_t n) {
  for (uint64_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

static uint32_t min_header(unsigned version) { return version == 1 ? EL_R1_MIN : EL_R2_MIN; }

/* The record's number as its messages show it: 1.0 headers carry their own. */
static int64_t shown_index(const el_reader *r) {
  return r->version == 1 && r->rec.header_ok ? (int64_t)r->rec.h.stored_index : r->rec.index;
}

/* ---- footer and file header ------------------------------------------------------------ */

static void st_footer(el_reader *r, const uint8_t *f, size_t n) {
  (void)n;
  r->footer_valid = !memcmp(f, EL_FOOTER_MAGIC, EL_MAGIC4_LEN) &&
                    el_crc32c(0, f, EL_FT_CRC) == el_ld32(f + EL_FT_CRC);
  if (r->footer_valid) {
    r->footer_count = el_ld32(f + EL_FT_COUNT);
    r->footer_index = el_ld64(f + EL_FT_INDEX);
    r->footer_size = el_ld64(f + EL_FT_SIZE);
    unsigned m = r->footer_raw_major = el_ld16(f + EL_FT_MAJOR);
    r->footer_major = m >= EL_FORMAT_OLDEST_MAJOR && m <= EL_FORMAT_MAJOR ? m : 0;
  }
  go(r, S_HEAD_BEGIN);
}

static void st_head_begin(el_reader *r) {
  uint64_t n = r->size < EL_FH_MIN ? r->size : EL_FH_MIN;
  if (n)
    ask_bytes(r, S_HEAD_FIXED, 0, n);
  else
    go(r, S_HEAD_FIXED); /* an empty file: decided without bytes */
}

/* Where records are looked for when the header cannot say (damaged). */
static void damaged_header(el_reader *r, unsigned guess) {
  r->version = r->footer_major ? r->footer_major : guess == 1 ? 1 : 2;
  r->records_from = r->version == 1 ? EL_MAGIC_LEN : EL_ALIGN;
  go(r, S_INDEX_BEGIN);
}

static void st_head_fixed(el_reader *r, const uint8_t *p, size_t n) {
  if (n < EL_MAGIC_LEN || memcmp(p + EL_FH_MAGIC, EL_MAGIC, EL_MAGIC_LEN)) {
    if (!r->footer_major) {
      header_problem(r, EL_CODE_NOT_CHECKPOINT, 0,
                     r->size < EL_MAGIC_LEN ? "not an Elastic Lite checkpoint: only %u bytes"
                                            : "not an Elastic Lite checkpoint (no checkpoint "
                                              "magic at offset 0; %u bytes)",
                     r->size);
      go(r, S_DONE);
      return;
    }
    header_problem(r, EL_CODE_STRUCTURE, 0, "file header at offset 0 is corrupted (bad magic)");
    damaged_header(r, r->footer_major);
    return;
  }
  if (n < EL_FH_MIN) {
    header_problem(r, EL_CODE_TRUNCATED, r->size, "file is truncated inside its header (%u bytes)",
                   r->size);
    go(r, S_DONE);
    return;
  }
  r->hmajor = el_ld16(p + EL_FH_MAJOR);
  r->hminor = el_ld16(p + EL_FH_MINOR);
  r->hlen = el_ld32(p + EL_FH_LENGTH);
  if (r->hlen >= EL_FH_MIN && r->hlen <= r->size && r->hlen <= MAX_HEADER)
    ask_bytes(r, S_HEAD, 0, r->hlen);
  else
    go(r, S_HEAD); /* its CRC cannot match: decided without the bytes */
}

static void st_head(el_reader *r, const uint8_t *p, size_t n) {
  int crc_ok = p && n == r->hlen && el_crc32c(0, p, n - 4) == el_ld32(p + n - 4);
  unsigned major = r->hmajor;
  if (major > EL_FORMAT_MAJOR && !(r->footer_major && !crc_ok)) {
    header_problem(r, EL_CODE_NEWER, EL_FH_MAJOR,
                   "checkpoint format %u is newer than this reader supports (%u); upgrade "
                   "elastic-lite",
                   (uint64_t)major, (uint64_t)EL_FORMAT_MAJOR);
    r->file.newer = 1;
    r->file.major = major;
    r->file.minor = r->hminor;
    go(r, S_DONE);
    return;
  }
  if (!crc_ok) {
    int cut = r->hlen > r->size;
    header_problem(r, cut ? EL_CODE_TRUNCATED : EL_CODE_CHECKSUM, 0,
                   cut ? "file header at offset 0 is truncated or corrupted (header length %u, "
                         "file %u bytes)"
                       : "file header at offset 0 is corrupted (checksum mismatch; header "
                         "length %u, file %u bytes)",
                   (uint64_t)r->hlen, r->size);
    damaged_header(r, major);
    return;
  }
  if (major < EL_FORMAT_OLDEST_MAJOR) {
    header_problem(r, EL_CODE_STRUCTURE, EL_FH_MAJOR,
                   "checkpoint format %u does not exist (corrupted header?)", (uint64_t)major);
    go(r, S_DONE);
    return;
  }
  r->version = major;
  size_t pl = el_ld16(p + EL_FH_PRODUCER_LEN), ql = el_ld16(p + EL_FH_PYTHON_LEN);
  if (pl + ql > r->hlen - EL_FH_MIN) {
    header_problem(r, EL_CODE_STRUCTURE, EL_FH_PRODUCER_LEN,
                   "file header strings overflow the header (corrupted)");
    r->records_from = major == 1 ? EL_MAGIC_LEN : EL_ALIGN;
    go(r, S_INDEX_BEGIN);
    return;
  }
  if (major == 2 && r->hlen % EL_ALIGN)
    header_problem(r, EL_CODE_STRUCTURE, EL_FH_LENGTH,
                   "file header length %u is not a multiple of 64 (damaged)", (uint64_t)r->hlen);
  r->strings = malloc(pl + ql + 1);
  if (!r->strings) {
    header_problem(r, EL_CODE_NOMEM, 0, "out of memory reading the file header");
    go(r, S_DONE);
    return;
  }
  memcpy(r->strings, p + EL_FH_STRINGS, pl + ql);
  el_file_info *fi = &r->file;
  fi->header_ok = 1;
  fi->major = major;
  fi->minor = r->hminor;
  fi->created_ms = (int64_t)el_ld64(p + EL_FH_CREATED);
  fi->producer = r->strings;
  fi->producer_len = pl;
  fi->python = r->strings + pl;
  fi->python_len = ql;
  r->records_from = r->hlen;
  go(r, S_INDEX_BEGIN);
}

/* ---- index ------------------------------------------------------------------------------ */

static void start_scan(el_reader *r) {
  r->scanning = 1;
  r->scan_pos = r->records_from;
  r->scan_end = r->index_at;
  r->scan_i = 0;
  go(r, S_SCAN_NEXT);
}

/* The footer's claims, checked before the index is read (they need no more bytes). */
static void st_index_begin(el_reader *r) {
  uint64_t n = r->size, from = r->records_from;
  r->index_at = n;
  if (n < from || n - from < EL_IX_SIZE(0, 0) + EL_FOOTER_SIZE) {
    index_problem(r, EL_CODE_TRUNCATED, n,
                  "file ends at offset %u before its footer: the file is truncated", n);
    start_scan(r);
    return;
  }
  uint64_t foff = n - EL_FOOTER_SIZE, ix = r->footer_index;
  uint32_t cnt = r->footer_count;
  if (!r->footer_valid) {
    index_problem(r, EL_CODE_TRUNCATED, foff,
                  "no valid footer at offset %u: the file is truncated or the footer is "
                  "corrupted",
                  foff);
  } else if (r->footer_size != n) {
    index_problem(r, EL_CODE_TRUNCATED, foff,
                  "footer says the file has %u bytes but it has %u: truncated or extended",
                  r->footer_size, n);
  } else if (r->footer_raw_major != r->version) {
    index_problem(r, EL_CODE_STRUCTURE, foff, "footer at offset %u says format %u, the header %u",
                  foff, (uint64_t)r->footer_raw_major, (uint64_t)r->version);
  } else if (ix < from || ix > foff ||
             foff - ix != EL_IX_SIZE(r->version == 1 ? EL_IX1_ENTRY : EL_IX2_ENTRY, cnt)) {
    index_problem(r, EL_CODE_STRUCTURE, foff,
                  "footer at offset %u points to an impossible index (offset %u, %u records)",
                  foff, ix, (uint64_t)cnt);
  } else {
    r->index_at = ix; /* an intact index position still bounds a scan */
    r->file.has_index = 1;
    r->file.index_offset = ix;
    ask_bytes(r, S_INDEX, ix, foff - ix);
    return;
  }
  start_scan(r);
}

/* 1.0: strictly increasing offsets; 2.0: contiguous records from the first to the index. */
static int index_entries(el_reader *r, const uint8_t *ip, uint64_t ix) {
  uint64_t prev = r->records_from;
  for (uint32_t i = 0; i < r->count; i++) {
    if (r->version == 1) {
      r->offs[i] = el_ld64(ip + EL_IX_ENTRIES + EL_IX1_ENTRY * (size_t)i);
      r->lens[i] = 0;
      if (r->offs[i] < prev || r->offs[i] >= ix) {
        index_problem(r, EL_CODE_STRUCTURE, ix,
                      "index at offset %u lists record %u at impossible offset %u", ix,
                      (uint64_t)i, r->offs[i]);
        return 0;
      }
      prev = r->offs[i] + 1;
      continue;
    }
    const uint8_t *e = ip + EL_IX_ENTRIES + EL_IX2_ENTRY * (size_t)i;
    r->offs[i] = el_ld64(e + EL_IX2_OFFSET);
    r->lens[i] = el_ld64(e + EL_IX2_LENGTH);
    if (r->offs[i] != prev || r->lens[i] < EL_ALIGN || r->lens[i] % EL_ALIGN ||
        r->lens[i] > ix - prev) {
      index_problem(r, EL_CODE_STRUCTURE, ix,
                    "index at offset %u lists record %u at impossible offset %u (length %u)", ix,
                    (uint64_t)i, r->offs[i], r->lens[i]);
      return 0;
    }
    prev = r->offs[i] + r->lens[i];
  }
  if (r->version == 2 && prev != ix) {
    index_problem(r, EL_CODE_STRUCTURE, ix,
                  "index at offset %u: its records end at offset %u, not where the index starts",
                  ix, prev);
    return 0;
  }
  return 1;
}

static void st_index(el_reader *r, const uint8_t *ip, size_t ilen) {
  uint64_t ix = r->want_off;
  uint32_t cnt = r->footer_count;
  if (memcmp(ip, EL_IDX_MAGIC, EL_MAGIC4_LEN) || el_ld32(ip + EL_IX_COUNT) != cnt ||
      el_crc32c(0, ip, ilen - 4) != el_ld32(ip + ilen - 4)) {
    index_problem(r, EL_CODE_CHECKSUM, ix, "index at offset %u is corrupted", ix);
    start_scan(r);
    return;
  }
  /* cnt is bounded by the file size (the index is that long), so these allocations are too */
  r->offs = malloc((cnt ? cnt : 1) * sizeof *r->offs);
  r->lens = malloc((cnt ? cnt : 1) * sizeof *r->lens);
  r->count = cnt;
  if (!r->offs || !r->lens) {
    index_problem(r, EL_CODE_NOMEM, ix, "out of memory reading the index");
    start_scan(r);
    return;
  }
  if (!index_entries(r, ip, ix)) {
    start_scan(r);
    return;
  }
  r->next_i = 0;
  go(r, S_NEXT_RECORD);
}

/* ---- one record --------------------------------------------------------------------------- */

static void begin_record(el_reader *r, uint64_t off, uint64_t limit, int64_t index,
                         uint64_t indexed_len, int check_index) {
  memset(&r->rec, 0, sizeof r->rec);
  r->rec.index = index;
  r->rec.offset = off;
  r->rec_avail = off <= limit ? limit - off : 0;
  r->rec_indexed_len = indexed_len;
  r->rec_check_index = check_index;
  r->rec_st = REC_GOOD;
  r->rec_next = off;
  go(r, S_REC_BEGIN);
}

static void st_next_record(el_reader *r) {
  uint32_t i = r->next_i;
  if (i >= r->count) {
    go(r, S_DONE);
    return;
  }
  r->next_i++;
  uint64_t limit = r->version == 2 ? r->offs[i] + r->lens[i]
                   : i + 1 < r->count ? r->offs[i + 1] : r->index_at;
  begin_record(r, r->offs[i], limit, (int64_t)i, r->lens[i], 1);
}

static void bad_header(el_reader *r) {
  r->rec_st = REC_BAD_HEADER;
  go(r, S_REC_END);
}

static void st_rec_begin(el_reader *r) {
  uint32_t min = min_header(r->version);
  if (r->rec_avail < min) {
    REC_FAIL(r, EL_CODE_TRUNCATED, r->rec.offset,
             "record %d at offset %u: header truncated (%u bytes left)", r->rec.index,
             r->rec.offset, r->rec_avail);
    bad_header(r);
    return;
  }
  ask_bytes(r, S_REC_FIXED, r->rec.offset, min);
}

static void st_rec_fixed(el_reader *r, const uint8_t *h, size_t n) {
  (void)n;
  el_rec_info *rec = &r->rec;
  if (memcmp(h, EL_REC_MAGIC, EL_MAGIC4_LEN)) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: no record magic (damaged or misplaced)", rec->index,
             rec->offset);
    bad_header(r);
    return;
  }
  uint32_t hlen = el_ld32(h + EL_R1_LENGTH); /* the same place in both versions */
  if (hlen < min_header(r->version) || hlen > r->rec_avail) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: header length %u is out of range (damaged header)",
             rec->index, rec->offset, (uint64_t)hlen);
    bad_header(r);
    return;
  }
  ask_bytes(r, S_REC_HEAD, rec->offset, hlen);
}

/* The header's fields, for either version. 0 when its names overflow it. */
static int parse_record_header(el_reader *r, const uint8_t *h, uint32_t hlen) {
  el_rec_header *rh = &r->rec.h;
  rh->version = r->version;
  rh->header_len = hlen;
  uint32_t names_at;
  if (r->version == 1) {
    rh->kind = EL_KIND_DATA;
    rh->serializer = h[EL_R1_SERIALIZER];
    rh->stored_index = el_ld32(h + EL_R1_INDEX);
    rh->stream_len = el_ld64(h + EL_R1_PAYLOAD_LEN);
    rh->stream_crc = el_ld32(h + EL_R1_PAYLOAD_CRC);
    rh->names_len = el_ld32(h + EL_R1_NAMES_LEN);
    rh->record_len = rh->stream_len > UINT64_MAX - hlen ? UINT64_MAX : hlen + rh->stream_len;
    names_at = EL_R1_NAMES;
  } else {
    uint64_t body = el_ld64(h + EL_R2_BODY_LEN);
    rh->kind = h[EL_R2_KIND];
    rh->serializer = h[EL_R2_SERIALIZER];
    rh->nbuffers = el_ld32(h + EL_R2_BUFFERS);
    rh->stream_len = el_ld64(h + EL_R2_STREAM_LEN);
    rh->stream_crc = el_ld32(h + EL_R2_STREAM_CRC);
    rh->names_len = el_ld32(h + EL_R2_NAMES_LEN);
    rh->record_len = body > UINT64_MAX - hlen ? UINT64_MAX : hlen + body;
    names_at = EL_R2_NAMES;
  }
  if (rh->names_len > hlen - names_at - 4) return 0;
  rh->names = r->rec_header + names_at;
  return 1;
}

/* The extent: within the bytes available and (2.0) a multiple of 64 matching the index. */
static int check_extent(el_reader *r) {
  el_rec_info *rec = &r->rec;
  const el_rec_header *h = &rec->h;
  if (h->record_len > r->rec_avail) {
    uint64_t pay = rec->offset + h->header_len;
    if (r->version == 1)
      REC_FAIL(r, EL_CODE_TRUNCATED, pay,
               "record %d at offset %u: payload of %u bytes at offset %u runs past the end of "
               "the records (%u bytes left): the file is truncated",
               shown_index(r), rec->offset, h->stream_len, pay, r->rec_avail - h->header_len);
    else
      REC_FAIL(r, EL_CODE_TRUNCATED, pay,
               "record %d at offset %u: record of %u bytes runs past the end of the records "
               "(%u bytes left): the file is truncated",
               rec->index, rec->offset, h->record_len, r->rec_avail);
    return 0;
  }
  if (r->version == 2 && h->record_len % EL_ALIGN) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: record length %u is not a multiple of 64 (damaged)",
             rec->index, rec->offset, h->record_len);
    return 0;
  }
  if (r->version == 2 && r->rec_indexed_len && h->record_len != r->rec_indexed_len) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset, "record %d at offset %u: header says %u bytes, the index %u",
             rec->index, rec->offset, h->record_len, r->rec_indexed_len);
    return 0;
  }
  return 1;
}

/* 2.0 without buffers: the stream and the padding fill the record exactly. With buffers,
 * the table must fit; its entries are checked once read. */
static int check_stream_fits(el_reader *r) {
  el_rec_info *rec = &r->rec;
  const el_rec_header *h = &rec->h;
  uint64_t len = h->record_len, pos = h->header_len;
  if (h->stream_len > len - pos) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: stream of %u bytes runs past the record (%u bytes)",
             rec->index, rec->offset, h->stream_len, len);
    return 0;
  }
  pos += h->stream_len;
  if (!h->nbuffers) {
    if (el_align_up(pos) == len) return 1;
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: record length %u does not match its stream (expected %u)",
             rec->index, rec->offset, len, el_align_up(pos));
    return 0;
  }
  if (h->nbuffers > EL_MAX_BUFFERS || EL_BT_SIZE(h->nbuffers) > len - pos) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset + pos,
             "record %d at offset %u: buffer table of %u entries runs past the record",
             rec->index, rec->offset, (uint64_t)h->nbuffers);
    return 0;
  }
  return 1;
}

static void st_rec_head(el_reader *r, const uint8_t *h, size_t hlen) {
  el_rec_info *rec = &r->rec;
  uint32_t stored = el_ld32(h + hlen - 4), got = el_crc32c(0, h, hlen - 4);
  if (stored != got) {
    REC_FAIL(r, EL_CODE_CHECKSUM, rec->offset,
             "record %d at offset %u: header checksum mismatch (stored %x, computed %x): the "
             "record header is corrupted",
             rec->index, rec->offset, stored, got);
    bad_header(r);
    return;
  }
  free(r->rec_header);
  if (!(r->rec_header = malloc(hlen))) {
    REC_FAIL(r, EL_CODE_NOMEM, rec->offset, "out of memory reading record %d's header", rec->index);
    bad_header(r);
    return;
  }
  memcpy(r->rec_header, h, hlen);
  if (!parse_record_header(r, h, (uint32_t)hlen)) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: names length %u exceeds the header", rec->index,
             rec->offset, (uint64_t)rec->h.names_len);
    bad_header(r);
    return;
  }
  rec->header_ok = 1;
  const el_rec_header *rh = &rec->h;
  r->rec_st = REC_BAD_PAYLOAD; /* until every check below has passed */
  r->rec_next = rh->record_len <= r->rec_avail ? rec->offset + rh->record_len
                                               : rec->offset + r->rec_avail;
  if (!check_extent(r)) {
    go(r, S_REC_END);
  } else if (r->version == 1) {
    if (r->rec_check_index && rh->stored_index != (uint64_t)rec->index)
      REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset, "record %d at offset %u: header says it is record %u",
               rec->index, rec->offset, (uint64_t)rh->stored_index);
    go(r, rec->error.set ? S_REC_END : S_REC_KIND);
  } else if (!check_stream_fits(r)) {
    go(r, S_REC_END);
  } else if (rh->nbuffers) {
    ask_bytes(r, S_REC_TABLE, rec->offset + rh->header_len + rh->stream_len,
              EL_BT_SIZE(rh->nbuffers));
  } else {
    go(r, S_REC_KIND);
  }
}

/* 2.0: the buffer table, and every buffer exactly where the layout rules put it. */
static void st_rec_table(el_reader *r, const uint8_t *t, size_t tsize) {
  el_rec_info *rec = &r->rec;
  const el_rec_header *h = &rec->h;
  uint64_t len = h->record_len, pos = h->header_len + h->stream_len;
  uint32_t m = h->nbuffers;
  uint32_t stored = el_ld32(t + tsize - 4), got = el_crc32c(0, t, tsize - 4);
  if (stored != got) {
    REC_FAIL(r, EL_CODE_CHECKSUM, rec->offset + pos,
             "record %d at offset %u: buffer table checksum mismatch (stored %x, computed %x)",
             rec->index, rec->offset, stored, got);
    go(r, S_REC_END);
    return;
  }
  if (!(rec->buffers = malloc(m * sizeof *rec->buffers))) {
    REC_FAIL(r, EL_CODE_NOMEM, rec->offset, "out of memory reading record %d's buffer table",
             rec->index);
    go(r, S_REC_END);
    return;
  }
  pos += tsize;
  for (uint32_t i = 0; i < m; i++) {
    el_buffer_entry *e = &rec->buffers[i];
    const uint8_t *te = t + (size_t)i * EL_BT_ENTRY;
    e->offset = el_ld64(te + EL_BT_OFFSET);
    e->length = el_ld64(te + EL_BT_LENGTH);
    e->crc = el_ld32(te + EL_BT_CRC);
    e->checked = -1;
  }
  for (uint32_t i = 0; i < m; i++) {
    el_buffer_entry *e = &rec->buffers[i];
    pos = el_align_up(pos);
    if (e->offset != pos || e->length > len - pos) {
      REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset + e->offset,
               "record %d at offset %u: buffer %u (offset %u, %u bytes) is not where the "
               "layout puts it (offset %u, within %u bytes)",
               rec->index, rec->offset, (uint64_t)i, e->offset, e->length, pos, len);
      go(r, S_REC_END);
      return;
    }
    pos += e->length;
  }
  if (el_align_up(pos) != len) {
    REC_FAIL(r, EL_CODE_STRUCTURE, rec->offset,
             "record %d at offset %u: record length %u does not match its buffers (expected %u)",
             rec->index, rec->offset, len, el_align_up(pos));
    go(r, S_REC_END);
    return;
  }
  go(r, S_REC_KIND);
}

static int check_kind(el_reader *r) {
  const el_rec_header *h = &r->rec.h;
  uint64_t off = r->rec.offset;
  int64_t shown = shown_index(r);
  if (h->kind == 0) {
    REC_FAIL(r, EL_CODE_STRUCTURE, off, "record %d at offset %u: record kind 0 does not exist",
             shown, off);
  } else if (!el_kind_name(h->kind)) {
    REC_FAIL(r, EL_CODE_UNKNOWN_KIND, off,
             "record %d at offset %u: record kind %u is not readable by this version "
             "(written by a newer elastic-lite?)",
             shown, off, (uint64_t)h->kind);
  } else if (h->kind == EL_KIND_DATA && !el_serializer_name(h->serializer)) {
    REC_FAIL(r, EL_CODE_UNKNOWN_SERIALIZER, off,
             "record %d at offset %u: unknown serializer code %u (written by a newer "
             "elastic-lite?)",
             shown, off, (uint64_t)h->serializer);
  } else if (h->kind != EL_KIND_DATA && (h->serializer != EL_SER_NONE || h->nbuffers)) {
    REC_FAIL(r, EL_CODE_STRUCTURE, off,
             "record %d at offset %u: a %s record has no serializer and no buffers", shown, off,
             el_kind_name(h->kind));
  }
  return !r->rec.error.set;
}

static void st_rec_kind(el_reader *r) {
  const el_rec_header *h = &r->rec.h;
  if (!check_kind(r) || (r->flags & EL_INSPECT_HEADERS_ONLY)) {
    go(r, S_REC_END);
    return;
  }
  crc_range(r, r->version == 1, r->rec.offset + h->header_len, h->stream_len, S_REC_STREAM_CRC);
}

static void st_rec_stream_crc(el_reader *r) {
  el_rec_info *rec = &r->rec;
  const el_rec_header *h = &rec->h;
  if (r->crc_result != h->stream_crc) {
    uint64_t pay = rec->offset + h->header_len;
    REC_FAIL(r, EL_CODE_CHECKSUM, pay,
             "record %d at offset %u: payload checksum mismatch (stored %x, computed %x): the "
             "payload at offset %u is corrupted",
             shown_index(r), rec->offset, h->stream_crc, r->crc_result, pay);
    go(r, S_REC_END);
    return;
  }
  if (r->version == 1) {
    go(r, S_REC_VALIDATE);
    return;
  }
  r->buf_i = 0;
  r->pad_from = h->header_len + h->stream_len + (h->nbuffers ? EL_BT_SIZE(h->nbuffers) : 0);
  go(r, S_REC_PAD);
}

/* 2.0 content: the zero padding before buffer buf_i (or at the end), then buffer buf_i's CRC. */
static void st_rec_pad(el_reader *r) {
  const el_rec_header *h = &r->rec.h;
  uint64_t to = r->buf_i < h->nbuffers ? r->rec.buffers[r->buf_i].offset : h->record_len;
  if (to > r->pad_from)
    ask_bytes(r, S_REC_PAD_CHECK, r->rec.offset + r->pad_from, to - r->pad_from);
  else
    go(r, S_REC_PAD_CHECK);
}

static void st_rec_pad_check(el_reader *r, const uint8_t *p, size_t n) {
  el_rec_info *rec = &r->rec;
  if (n && !all_zero(p, n)) {
    uint64_t at = rec->offset + r->pad_from;
    REC_FAIL(r, EL_CODE_STRUCTURE, at, "record %d at offset %u: padding at offset %u is not zero (damaged)",
             rec->index, rec->offset, at);
    go(r, S_REC_END);
  } else if (r->buf_i == rec->h.nbuffers) {
    go(r, S_REC_VALIDATE);
  } else {
    const el_buffer_entry *e = &rec->buffers[r->buf_i];
    crc_range(r, 0, rec->offset + e->offset, e->length, S_REC_BUFFER_CRC);
  }
}

static void st_rec_buffer_crc(el_reader *r) {
  el_rec_info *rec = &r->rec;
  el_buffer_entry *e = &rec->buffers[r->buf_i];
  e->checked = r->crc_result == e->crc;
  if (!e->checked) {
    REC_FAIL(r, EL_CODE_CHECKSUM, rec->offset + e->offset,
             "record %d at offset %u: buffer %u checksum mismatch (stored %x, computed %x): "
             "the buffer at offset %u is corrupted",
             rec->index, rec->offset, (uint64_t)r->buf_i, e->crc, r->crc_result,
             rec->offset + e->offset);
    go(r, S_REC_END);
    return;
  }
  r->pad_from = e->offset + e->length;
  r->buf_i++;
  go(r, S_REC_PAD);
}

/* ---- stream validation: the pickle validator (data) or UTF-8 (the JSON kinds) ---------- */

static uint64_t stream_at(const el_reader *r) { return r->rec.offset + r->rec.h.header_len; }

/* Asks for the stream's bytes from `from` (relative), at least `min` of them. */
static void ask_stream(el_reader *r, stage next, uint64_t from, uint64_t min) {
  uint64_t left = r->rec.h.stream_len - from, len = min > r->chunk ? min : r->chunk;
  ask_bytes(r, next, stream_at(r) + from, len < left ? len : left);
}

static void st_rec_validate(el_reader *r) {
  const el_rec_header *h = &r->rec.h;
  if (!(r->flags & EL_INSPECT_VALIDATE)) {
    r->rec_st = REC_GOOD;
    go(r, S_REC_END);
  } else if (h->kind != EL_KIND_DATA) {
    r->utf8_pos = 0;
    if (h->stream_len)
      ask_stream(r, S_REC_UTF8, 0, 1);
    else
      go(r, S_REC_END);
  } else if (!h->stream_len) {
    el_pickle_validate(NULL, 0, &r->rec.pickle); /* the validator's own "empty" message */
    r->rec.validated = 1;
    REC_FAIL(r, EL_CODE_PICKLE, stream_at(r), "record %d at offset %u: pickle stream rejected: %s",
             shown_index(r), r->rec.offset, r->rec.pickle.message);
    go(r, S_REC_END);
  } else if (!(r->pv = el_pv_new(h->stream_len))) {
    REC_FAIL(r, EL_CODE_NOMEM, stream_at(r), "out of memory validating record %d", r->rec.index);
    go(r, S_REC_END);
  } else {
    ask_stream(r, S_REC_PICKLE, 0, 1);
  }
}

static void st_rec_pickle(el_reader *r, const uint8_t *p, size_t n) {
  el_rec_info *rec = &r->rec;
  uint64_t from = r->want_off - stream_at(r);
  if (el_pv_feed(r->pv, from, p, n) == EL_PV_NEED) {
    uint64_t off, len;
    el_pv_need(r->pv, &off, &len);
    ask_stream(r, S_REC_PICKLE, off, len);
    return;
  }
  el_pickle_report *pr = el_pv_report(r->pv);
  rec->pickle = *pr;
  memset(pr, 0, sizeof *pr); /* the record owns the report now */
  el_pv_free(r->pv);
  r->pv = NULL;
  rec->validated = 1;
  uint64_t at = stream_at(r);
  int64_t shown = shown_index(r);
  if (rec->pickle.ok && rec->pickle.arena.failed) {
    rec->pickle.ok = 0;
    rec->pickle.nomem = 1;
    el_fmt(rec->pickle.message, sizeof rec->pickle.message, "out of memory while validating (globals)");
  }
  if (!rec->pickle.ok)
    el_problem_set(&rec->error, rec->pickle.nomem ? EL_CODE_NOMEM : EL_CODE_PICKLE,
                   at + rec->pickle.offset, shown, rec->pickle.opcode,
                   "record %d at offset %u: pickle stream rejected: %s", shown, rec->offset,
                   rec->pickle.message);
  else if (rec->pickle.buffers_used != rec->h.nbuffers)
    el_problem_set(&rec->error, EL_CODE_PICKLE, at, shown, "NEXT_BUFFER",
                   "record %d at offset %u: the pickle stream uses %u out-of-band buffers but "
                   "the record holds %u",
                   shown, rec->offset, rec->pickle.buffers_used, (uint64_t)rec->h.nbuffers);
  else
    r->rec_st = REC_GOOD;
  go(r, S_REC_END);
}

/* UTF-8 of a manifest or history, window by window (a sequence cut by a window's end is read
 * again from its first byte). */
static void st_rec_utf8(el_reader *r, const uint8_t *p, size_t n) {
  const el_rec_header *h = &r->rec.h;
  size_t ok = el_utf8_valid_prefix(p, n, 0);
  r->utf8_pos += ok;
  if (ok == n && r->utf8_pos == h->stream_len) {
    r->rec_st = REC_GOOD;
    go(r, S_REC_END);
  } else if (r->utf8_pos + n - ok < h->stream_len && n - ok < 4) {
    ask_stream(r, S_REC_UTF8, r->utf8_pos, 4);
  } else if (ok == n) {
    ask_stream(r, S_REC_UTF8, r->utf8_pos, 1);
  } else {
    uint64_t at = stream_at(r) + r->utf8_pos;
    REC_FAIL(r, EL_CODE_STRUCTURE, at, "record %d at offset %u: %s is not UTF-8 (bad byte at offset %u)",
             shown_index(r), r->rec.offset, el_kind_name(h->kind), at);
    go(r, S_REC_END);
  }
}

static void st_rec_end(el_reader *r) {
  el_rec_info *rec = &r->rec;
  if (rec->error.set && r->rec_st == REC_GOOD) r->rec_st = REC_BAD_PAYLOAD;
  rec->index = shown_index(r);
  if (rec->error.set) rec->error.record = rec->index;
  el_report_record(&r->recs, rec, r->nrecs++ == 0);
  if (rec->error.set) {
    r->ok = 0;
    if (!r->err.set) r->err = rec->error;
  }
  if (rec->validated) el_pickle_report_free(&rec->pickle);
  free(rec->buffers);
  rec->buffers = NULL;
  el_pv_free(r->pv);
  r->pv = NULL;
  if (!r->scanning) {
    go(r, S_NEXT_RECORD);
  } else if (r->rec_st == REC_BAD_HEADER) { /* its length is unknown: resynchronize */
    r->rs_from = rec->offset + 1;
    r->rs_end = r->scan_end;
    r->rs_then = S_SCAN_RESYNCED;
    go(r, S_RESYNC);
  } else {
    r->scan_pos = r->rec_next;
    go(r, S_SCAN_NEXT);
  }
}

/* ---- scanning, when the footer or index cannot be used ----------------------------------------- */

static void st_scan_next(el_reader *r) {
  if (r->scan_pos >= r->scan_end) {
    go(r, S_DONE);
  } else if (r->scan_end - r->scan_pos < EL_MAGIC4_LEN) {
    go(r, S_SCAN_MAGIC); /* cannot be a record */
  } else {
    ask_bytes(r, S_SCAN_MAGIC, r->scan_pos, EL_MAGIC4_LEN);
  }
}

static void st_scan_magic(el_reader *r, const uint8_t *p, size_t n) {
  if (n == EL_MAGIC4_LEN && !memcmp(p, EL_REC_MAGIC, EL_MAGIC4_LEN)) {
    begin_record(r, r->scan_pos, r->scan_end, r->scan_i++, 0, 0);
  } else if (n == EL_MAGIC4_LEN && !memcmp(p, EL_IDX_MAGIC, EL_MAGIC4_LEN)) {
    go(r, S_DONE); /* reached the index */
  } else {
    r->rs_from = r->scan_pos;
    r->rs_end = r->scan_end;
    r->rs_then = S_SCAN_RESYNCED;
    r->scan_garbage = 1;
    go(r, S_RESYNC);
  }
}

static void st_scan_resynced(el_reader *r) {
  if (r->scan_garbage) {
    r->scan_garbage = 0;
    r->ok = 0;
    el_problem_set(&r->err, EL_CODE_STRUCTURE, r->scan_pos, -1, NULL,
                   "%u bytes at offset %u are not a record (damaged or truncated data)",
                   r->rs_at - r->scan_pos, r->scan_pos);
  }
  r->scan_pos = r->rs_at;
  go(r, S_SCAN_NEXT);
}

/* Resynchronization: the next offset in [rs_from, rs_end) where a record header with a valid
 * CRC starts (2.0: multiples of 64 only), into rs_at (rs_end if none), then rs_then. The
 * candidates are found in chunks; each candidate's header is then read whole. */
static void st_resync(el_reader *r) {
  uint64_t from = r->version == 2 ? el_align_up(r->rs_from) : r->rs_from;
  if (from >= r->rs_end || r->rs_end - from < min_header(r->version)) {
    r->rs_at = r->rs_end;
    go(r, r->rs_then);
    return;
  }
  r->rs_from = from;
  uint64_t left = r->rs_end - from;
  ask_bytes(r, S_RESYNC_CHUNK, from, left < r->chunk ? left : r->chunk);
}

static void st_resync_chunk(el_reader *r, const uint8_t *p, size_t n) {
  uint64_t base = r->want_off, i = 0;
  uint32_t min = min_header(r->version);
  const uint64_t look = EL_R1_LENGTH + 4; /* bytes a candidate needs here: magic and length */
  for (; i + look <= n; i += r->version == 2 ? EL_ALIGN : 1) {
    if (r->version == 1) { /* skip to the next 'E' */
      const uint8_t *e = memchr(p + i, EL_REC_MAGIC[0], (size_t)(n - i));
      i = e ? (uint64_t)(e - p) : n;
      if (i + look > n) break;
    }
    if (memcmp(p + i, EL_REC_MAGIC, EL_MAGIC4_LEN)) continue;
    uint32_t hlen = el_ld32(p + i + EL_R1_LENGTH);
    uint64_t at = base + i;
    if (hlen < min || hlen > r->rs_end - at) continue;
    r->rs_from = at; /* a candidate: read its whole header */
    ask_bytes(r, S_RESYNC_CANDIDATE, at, hlen);
    return;
  }
  /* nothing up to i (the first position not examined): go on from there */
  if (base + i >= r->rs_end || (base + n >= r->rs_end && r->rs_end - (base + i) < look)) {
    r->rs_at = r->rs_end;
    go(r, r->rs_then);
    return;
  }
  r->rs_from = base + i;
  go(r, S_RESYNC);
}

static void st_resync_candidate(el_reader *r, const uint8_t *h, size_t hlen) {
  if (el_crc32c(0, h, hlen - 4) == el_ld32(h + hlen - 4)) {
    r->rs_at = r->rs_from;
    go(r, r->rs_then);
    return;
  }
  r->rs_from += 1; /* st_resync aligns it again in 2.0 */
  go(r, S_RESYNC);
}

/* ---- driving ----------------------------------------------------------------------------------- */

/* Runs one stage with the answer (bytes p/n, or none). */
static void run(el_reader *r, const uint8_t *p, size_t n) {
  switch (r->st) {
    case S_FOOTER: st_footer(r, p, n); break;
    case S_HEAD_BEGIN: st_head_begin(r); break;
    case S_HEAD_FIXED: st_head_fixed(r, p, n); break;
    case S_HEAD: st_head(r, p, n); break;
    case S_INDEX_BEGIN: st_index_begin(r); break;
    case S_INDEX: st_index(r, p, n); break;
    case S_NEXT_RECORD: st_next_record(r); break;
    case S_REC_BEGIN: st_rec_begin(r); break;
    case S_REC_FIXED: st_rec_fixed(r, p, n); break;
    case S_REC_HEAD: st_rec_head(r, p, n); break;
    case S_REC_TABLE: st_rec_table(r, p, n); break;
    case S_REC_KIND: st_rec_kind(r); break;
    case S_REC_STREAM_CRC: st_rec_stream_crc(r); break;
    case S_REC_PAD: st_rec_pad(r); break;
    case S_REC_PAD_CHECK: st_rec_pad_check(r, p, n); break;
    case S_REC_BUFFER_CRC: st_rec_buffer_crc(r); break;
    case S_REC_VALIDATE: st_rec_validate(r); break;
    case S_REC_PICKLE: st_rec_pickle(r, p, n); break;
    case S_REC_UTF8: st_rec_utf8(r, p, n); break;
    case S_REC_END: st_rec_end(r); break;
    case S_CRC_BYTES: st_crc_bytes(r, p, n); break;
    case S_SCAN_NEXT: st_scan_next(r); break;
    case S_SCAN_MAGIC: st_scan_magic(r, p, n); break;
    case S_SCAN_RESYNCED: st_scan_resynced(r); break;
    case S_RESYNC: st_resync(r); break;
    case S_RESYNC_CHUNK: st_resync_chunk(r, p, n); break;
    case S_RESYNC_CANDIDATE: st_resync_candidate(r, p, n); break;
    case S_DONE: break;
  }
}

/* Runs the stages that need nothing, until one asks for something or the reading is done. */
static void drive(el_reader *r) {
  while (r->want == EL_NEED_DONE && r->st != S_DONE) run(r, NULL, 0);
}

el_reader *el_reader_new(double file_size, int flags, double chunk) {
  if (!(file_size >= 0 && file_size <= (double)EL_MAX_LENGTH) || !(chunk >= 0)) {
    el_set_last_error("file size and chunk must be whole numbers of bytes (up to 2^53)");
    return NULL;
  }
  el_reader *r = calloc(1, sizeof *r);
  if (!r) {
    el_set_last_error("out of memory: could not allocate a reader");
    return NULL;
  }
  r->size = (uint64_t)file_size;
  r->flags = flags;
  r->chunk = chunk >= 64 ? (chunk < (double)EL_MAX_LENGTH ? (uint64_t)chunk : EL_MAX_LENGTH)
                         : (uint64_t)1 << 20;
  r->ok = 1;
  r->file.size = r->size;
  if (r->size >= EL_FOOTER_SIZE)
    ask_bytes(r, S_FOOTER, r->size - EL_FOOTER_SIZE, EL_FOOTER_SIZE);
  else
    go(r, S_HEAD_BEGIN);
  drive(r);
  return r;
}

void el_reader_free(el_reader *r) {
  if (!r) return;
  el_buf_free(&r->recs);
  free(r->strings);
  free(r->offs);
  free(r->lens);
  free(r->rec_header);
  free(r->rec.buffers);
  if (r->rec.validated) el_pickle_report_free(&r->rec.pickle);
  el_pv_free(r->pv);
  free(r);
}

int el_reader_next(const el_reader *r) { return r ? r->want : EL_EINVAL; }
double el_reader_offset(const el_reader *r) { return r ? (double)r->want_off : 0; }
double el_reader_length(const el_reader *r) { return r ? (double)r->want_len : 0; }
const char *el_reader_error(const el_reader *r) { return r ? r->misuse : "no reader (NULL)"; }

int el_reader_feed(el_reader *r, const uint8_t *p, size_t n) {
  if (!r) return EL_EINVAL;
  if (r->want != EL_NEED_BYTES) {
    el_fmt(r->misuse, sizeof r->misuse, "the reader did not ask for bytes (it asks for %s)",
           r->want == EL_NEED_CRC32 ? "a CRC-32" : "nothing");
    return EL_ESTATE;
  }
  if (!p || n != r->want_len) {
    el_fmt(r->misuse, sizeof r->misuse,
           "the reader asked for %u bytes at offset %u; %u were given", r->want_len,
           r->want_off, (uint64_t)n);
    return EL_EINVAL;
  }
  r->want = EL_NEED_DONE;
  run(r, p, n);
  drive(r);
  return EL_OK;
}

int el_reader_feed_crc32(el_reader *r, uint32_t crc) {
  if (!r) return EL_EINVAL;
  if (r->want != EL_NEED_CRC32) {
    el_fmt(r->misuse, sizeof r->misuse, "the reader did not ask for a CRC-32");
    return EL_ESTATE;
  }
  r->answered_crc = crc;
  run(r, NULL, 0); /* st_crc_bytes reads r->want == EL_NEED_CRC32 before it changes */
  drive(r);
  return EL_OK;
}

/* Answers, from bytes [offset, offset+n) the caller holds, the request now asked and every
 * later one that falls inside them (content CRCs included: those bytes are here anyway). */
int el_reader_feed_window(el_reader *r, double offset, const uint8_t *p, size_t n) {
  if (!r) return EL_EINVAL;
  uint64_t w = offset >= 0 && offset <= (double)EL_MAX_LENGTH ? (uint64_t)offset : UINT64_MAX;
  if (r->want == EL_NEED_DONE) {
    el_fmt(r->misuse, sizeof r->misuse, "the reader asks for nothing (it is done)");
    return EL_ESTATE;
  }
  if (!p || w > r->want_off || r->want_off - w > n || r->want_len > n - (r->want_off - w)) {
    el_fmt(r->misuse, sizeof r->misuse,
           "the window does not hold what the reader asked for (%u bytes at offset %u)",
           r->want_len, r->want_off);
    return EL_EINVAL;
  }
  while (r->want != EL_NEED_DONE && r->want_off >= w && r->want_off - w <= n &&
         r->want_len <= n - (r->want_off - w)) {
    const uint8_t *q = p + (r->want_off - w);
    if (r->want == EL_NEED_CRC32) {
      r->answered_crc = el_crc32(0, q, (size_t)r->want_len);
      run(r, NULL, 0);
    } else {
      r->want = EL_NEED_DONE;
      run(r, q, (size_t)r->want_len);
    }
    drive(r);
  }
  return EL_OK;
}

/* inspect.c writes the report from these. */
int el_reader_report(el_reader *r, el_buf *b) {
  if (r->want != EL_NEED_DONE || r->st != S_DONE) return 0;
  el_report_file(b, r->ok, &r->file, &r->err, &r->recs);
  return 1;
}

int el_reader_ok(const el_reader *r) { return r->ok; }
