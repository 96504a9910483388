/* Container reader: el_inspect lists and checks a checkpoint and writes the JSON report.
 *
 * Trust nothing: every length is compared with the bytes that are really there before it is
 * used, and nothing is allocated from a length read from the file. Records are read
 * independently; the index (found through the footer) says where each starts, and when the
 * footer or index is damaged the reader scans from the first record instead, resynchronizing
 * on the next record magic after a damaged record header. */
#include <stdlib.h>

#include "internal.h"

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
    el_error_json(&b, pr.message, pr.offset, -1, pr.opcode);
  el_buf_puts(&b, ",\"globals\":");
  el_pickle_globals_json(&b, &pr);
  el_buf_puts(&b, ",\"protocol\":");
  el_buf_u64(&b, (uint64_t)pr.protocol);
  el_buf_puts(&b, ",\"size\":");
  el_buf_u64(&b, len);
  el_buf_puts(&b, "}");
  el_pickle_report_free(&pr);
  return make_result(&b, pr.ok);
}

/* ---- inspection state ---------------------------------------------------------------- */

typedef struct {
  const uint8_t *p;
  size_t n;
  int flags;
  el_buf recs; /* the "records" array's items */
  size_t nrecs;
  int ok;
  int has_err; /* the file-level error: the first problem found */
  char msg[EL_ERRMSG];
  uint64_t eoff;
  int64_t erec;
  const char *eop;
} insp;

static void file_error(insp *x, uint64_t off, int64_t rec, const char *op, const char *fmt, ...) {
  x->ok = 0;
  if (x->has_err) return;
  x->has_err = 1;
  x->eoff = off;
  x->erec = rec;
  x->eop = op;
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(x->msg, sizeof x->msg, fmt, ap);
  va_end(ap);
}

static const char *serializer_name(unsigned s) {
  switch (s) {
    case EL_SER_PICKLE: return "pickle";
    case EL_SER_CLOUDPICKLE: return "cloudpickle";
    case EL_SER_DILL: return "dill";
    default: return NULL;
  }
}

static int has_magic(const insp *x, size_t off, const char *m) {
  return off <= x->n && x->n - off >= 4 && !memcmp(x->p + off, m, 4);
}

/* First offset >= from (and < end) where the record magic starts, or end. */
static size_t find_record_magic(const insp *x, size_t from, size_t end) {
  while (from < end && end - from >= 4) {
    const uint8_t *e = memchr(x->p + from, 'E', end - from - 3);
    if (!e) break;
    size_t at = (size_t)(e - x->p);
    if (!memcmp(e, EL_REC_MAGIC, 4)) return at;
    from = at + 1;
  }
  return end;
}

typedef enum { REC_GOOD, REC_BAD_PAYLOAD, REC_BAD_HEADER } rec_status;

/* Reads the record at off (bytes up to limit belong to records). Emits its JSON item.
 * *next is where the following record should start when the header was good. */
static rec_status read_record(insp *x, size_t off, size_t limit, int64_t pos_index,
                              int check_index, size_t *next) {
  const uint8_t *p = x->p;
  char msg[EL_ERRMSG] = "";
  uint64_t eoff = off;
  const char *eop = NULL;
  rec_status st = REC_GOOD;
  uint32_t hlen = 0, stored_index = 0, names_len = 0, crc = 0;
  uint64_t plen = 0;
  unsigned ser = 0;
  el_pickle_report pr;
  int validated = 0;

  if (off > limit || limit - off < EL_REC_FIXED + 4) {
    el_fmt(msg, sizeof msg, "record %d at offset %u: header truncated (%u bytes left)",
           pos_index, (uint64_t)off, (uint64_t)(off > limit ? 0 : limit - off));
    st = REC_BAD_HEADER;
  } else if (memcmp(p + off, EL_REC_MAGIC, 4)) {
    el_fmt(msg, sizeof msg, "record %d at offset %u: no record magic (damaged or misplaced)",
           pos_index, (uint64_t)off);
    st = REC_BAD_HEADER;
  } else {
    hlen = el_ld32(p + off + 4);
    names_len = el_ld32(p + off + 28);
    if (hlen < EL_REC_FIXED + 4 || hlen > limit - off) {
      el_fmt(msg, sizeof msg,
             "record %d at offset %u: header length %u is out of range (damaged header)",
             pos_index, (uint64_t)off, (uint64_t)hlen);
      st = REC_BAD_HEADER;
    } else if (el_crc32c(0, p + off, hlen - 4) != el_ld32(p + off + hlen - 4)) {
      el_fmt(msg, sizeof msg,
             "record %d at offset %u: header checksum mismatch (stored %x, computed %x): the "
             "record header is corrupted",
             pos_index, (uint64_t)off, el_ld32(p + off + hlen - 4), el_crc32c(0, p + off, hlen - 4));
      st = REC_BAD_HEADER;
    } else if (names_len > hlen - EL_REC_FIXED - 4) {
      el_fmt(msg, sizeof msg, "record %d at offset %u: names length %u exceeds the header",
             pos_index, (uint64_t)off, (uint64_t)names_len);
      st = REC_BAD_HEADER;
    }
  }
  if (st == REC_GOOD) {
    stored_index = el_ld32(p + off + 8);
    ser = p[off + 12];
    plen = el_ld64(p + off + 16);
    crc = el_ld32(p + off + 24);
    size_t pay = off + hlen;
    *next = pay;
    if (plen > (uint64_t)(limit - pay)) {
      el_fmt(msg, sizeof msg,
             "record %d at offset %u: payload of %u bytes at offset %u runs past the end of the "
             "records (%u bytes left): the file is truncated",
             (int64_t)stored_index, (uint64_t)off, plen, (uint64_t)pay, (uint64_t)(limit - pay));
      eoff = pay;
      st = REC_BAD_PAYLOAD;
      *next = limit;
    } else {
      *next = pay + (size_t)plen;
      if (check_index && stored_index != (uint64_t)pos_index) {
        el_fmt(msg, sizeof msg, "record %d at offset %u: header says it is record %u",
               pos_index, (uint64_t)off, (uint64_t)stored_index);
        st = REC_BAD_PAYLOAD;
      } else if (!serializer_name(ser)) {
        el_fmt(msg, sizeof msg,
               "record %d at offset %u: unknown serializer code %u (written by a newer "
               "elastic-lite?)",
               (int64_t)stored_index, (uint64_t)off, (uint64_t)ser);
        st = REC_BAD_PAYLOAD;
      } else if (!(x->flags & EL_INSPECT_HEADERS_ONLY)) {
        uint32_t got = el_crc32c(0, p + pay, (size_t)plen);
        if (got != crc) {
          el_fmt(msg, sizeof msg,
                 "record %d at offset %u: payload checksum mismatch (stored %x, computed %x): "
                 "the payload at offset %u is corrupted",
                 (int64_t)stored_index, (uint64_t)off, crc, got, (uint64_t)pay);
          eoff = pay;
          st = REC_BAD_PAYLOAD;
        } else if (x->flags & EL_INSPECT_VALIDATE) {
          el_pickle_validate(p + pay, (size_t)plen, &pr);
          validated = 1;
          if (!pr.ok) {
            el_fmt(msg, sizeof msg, "record %d at offset %u: pickle stream rejected: %s",
                   (int64_t)stored_index, (uint64_t)off, pr.message);
            eoff = pay + pr.offset;
            eop = pr.opcode;
            st = REC_BAD_PAYLOAD;
          }
        }
      }
    }
  }

  int64_t shown_index = st == REC_BAD_HEADER ? pos_index : (int64_t)stored_index;
  el_buf *b = &x->recs;
  if (x->nrecs++) el_buf_puts(b, ",");
  el_buf_puts(b, "{\"index\":");
  el_buf_i64(b, shown_index);
  el_buf_puts(b, ",\"names\":[");
  if (st != REC_BAD_HEADER) {
    const uint8_t *nm = p + off + EL_REC_FIXED;
    size_t i = 0, k = 0;
    while (i < names_len) {
      size_t j = i;
      while (j < names_len && nm[j]) j++;
      if (k++) el_buf_puts(b, ",");
      el_buf_json_str(b, nm + i, j - i);
      i = j + 1;
    }
  }
  el_buf_puts(b, "],\"serializer\":");
  if (st != REC_BAD_HEADER && serializer_name(ser))
    el_buf_json_cstr(b, serializer_name(ser));
  else
    el_buf_puts(b, "null");
  el_buf_puts(b, ",\"offset\":");
  el_buf_u64(b, off);
  if (st != REC_BAD_HEADER) {
    el_buf_puts(b, ",\"payload_offset\":");
    el_buf_u64(b, off + hlen);
    el_buf_puts(b, ",\"length\":");
    el_buf_u64(b, plen);
    el_buf_puts(b, ",\"crc32c\":\"");
    el_buf_hex32(b, crc);
    el_buf_puts(b, "\"");
  } else {
    el_buf_puts(b, ",\"payload_offset\":null,\"length\":null,\"crc32c\":null");
  }
  el_buf_puts(b, st == REC_GOOD ? ",\"ok\":true,\"error\":" : ",\"ok\":false,\"error\":");
  if (st == REC_GOOD)
    el_buf_puts(b, "null");
  else
    el_error_json(b, msg, eoff, shown_index, eop);
  el_buf_puts(b, ",\"globals\":");
  if (validated)
    el_pickle_globals_json(b, &pr);
  else
    el_buf_puts(b, "null");
  el_buf_puts(b, "}");
  if (validated) el_pickle_report_free(&pr);
  if (st != REC_GOOD) file_error(x, eoff, shown_index, eop, "%s", msg);
  return st;
}

/* Whether a record header with a valid CRC starts at off (used to resynchronize). */
static int header_valid_at(const insp *x, size_t off, size_t end) {
  if (off > end || end - off < EL_REC_FIXED + 4 || memcmp(x->p + off, EL_REC_MAGIC, 4)) return 0;
  uint32_t hlen = el_ld32(x->p + off + 4);
  return hlen >= EL_REC_FIXED + 4 && hlen <= end - off &&
         el_crc32c(0, x->p + off, hlen - 4) == el_ld32(x->p + off + hlen - 4);
}

/* Next offset after from where a valid record header starts, or end. */
static size_t resync(const insp *x, size_t from, size_t end) {
  for (size_t at = find_record_magic(x, from, end); at < end; at = find_record_magic(x, at + 1, end))
    if (header_valid_at(x, at, end)) return at;
  return end;
}

/* Lists records by scanning [from, end). */
static void scan_records(insp *x, size_t from, size_t end) {
  size_t pos = from;
  int64_t i = 0;
  while (pos < end) {
    if (end - pos < 4 || memcmp(x->p + pos, EL_REC_MAGIC, 4)) {
      if (has_magic(x, pos, EL_IDX_MAGIC)) break; /* reached the index */
      size_t at = resync(x, pos, end);
      file_error(x, pos, -1, NULL,
                 "%u bytes at offset %u are not a record (damaged or truncated data)",
                 (uint64_t)(at - pos), (uint64_t)pos);
      pos = at;
      continue;
    }
    size_t next = pos;
    rec_status st = read_record(x, pos, end, i, 0, &next);
    i++;
    if (st == REC_BAD_HEADER) /* length unknown: resynchronize on the next good header */
      pos = resync(x, pos + 4, end);
    else
      pos = next;
  }
}

/* Reads the footer and the index; on success fills offsets (malloc'ed) and returns 1. */
static int read_index(insp *x, size_t records_from, size_t *index_at, uint64_t **offs,
                      uint32_t *count) {
  const uint8_t *p = x->p;
  size_t n = x->n;
  *index_at = n;
  if (n < records_from + 12 + EL_FOOTER_SIZE || n - EL_FOOTER_SIZE < records_from) {
    file_error(x, n, -1, NULL,
               "file ends at offset %u before its footer: the file is truncated; "
               "records were found by scanning",
               (uint64_t)n);
    return 0;
  }
  const uint8_t *f = p + n - EL_FOOTER_SIZE;
  size_t foff = n - EL_FOOTER_SIZE;
  if (memcmp(f, EL_FOOTER_MAGIC, 4) || el_crc32c(0, f, 28) != el_ld32(f + 28)) {
    file_error(x, foff, -1, NULL,
               "no valid footer at offset %u: the file is truncated or the footer is "
               "corrupted; records were found by scanning",
               (uint64_t)foff);
    return 0;
  }
  uint32_t cnt = el_ld32(f + 4);
  uint64_t ix = el_ld64(f + 8), size = el_ld64(f + 16);
  if (size != n) {
    file_error(x, foff, -1, NULL,
               "footer says the file has %u bytes but it has %u: truncated or extended; "
               "records were found by scanning",
               size, (uint64_t)n);
    return 0;
  }
  if (ix < records_from || ix > foff || foff - ix != 12 + 8 * (uint64_t)cnt) {
    file_error(x, foff, -1, NULL,
               "footer at offset %u points to an impossible index (offset %u, %u records); "
               "records were found by scanning",
               (uint64_t)foff, ix, (uint64_t)cnt);
    return 0;
  }
  *index_at = (size_t)ix;
  const uint8_t *ip = p + ix;
  size_t ilen = foff - (size_t)ix;
  if (memcmp(ip, EL_IDX_MAGIC, 4) || el_ld32(ip + 4) != cnt ||
      el_crc32c(0, ip, ilen - 4) != el_ld32(ip + ilen - 4)) {
    file_error(x, ix, -1, NULL,
               "index at offset %u is corrupted; records were found by scanning", ix);
    return 0;
  }
  uint64_t *o = malloc((cnt ? cnt : 1) * sizeof *o); /* cnt is bounded by the file size */
  if (!o) {
    file_error(x, ix, -1, NULL, "out of memory reading the index; records were found by scanning");
    return 0;
  }
  uint64_t prev = records_from;
  for (uint32_t i = 0; i < cnt; i++) {
    o[i] = el_ld64(ip + 8 + 8 * (size_t)i);
    if (o[i] < prev || o[i] >= ix) {
      file_error(x, ix, -1, NULL,
                 "index at offset %u lists record %u at impossible offset %u; records were "
                 "found by scanning",
                 ix, (uint64_t)i, o[i]);
      free(o);
      return 0;
    }
    prev = o[i] + 1;
  }
  *offs = o;
  *count = cnt;
  return 1;
}

el_result *el_inspect(const uint8_t *buf, size_t len, int flags) {
  insp X;
  memset(&X, 0, sizeof X);
  insp *x = &X;
  x->p = buf;
  x->n = buf ? len : 0;
  x->flags = flags;
  x->ok = 1;
  const uint8_t *p = x->p;
  size_t n = x->n;

  int header_ok = 0, fatal = 0, newer = 0;
  uint32_t major = 0, minor = 0, hlen = 0;
  size_t records_from = 8;
  int footer_v1 = n >= EL_FOOTER_SIZE && !memcmp(p + n - EL_FOOTER_SIZE, EL_FOOTER_MAGIC, 4) &&
                  el_crc32c(0, p + n - EL_FOOTER_SIZE, 28) == el_ld32(p + n - 4) &&
                  el_ld16(p + n - 8) == EL_FORMAT_MAJOR;
  if (n < 8 || memcmp(p, EL_MAGIC, 8)) {
    if (footer_v1) {
      file_error(x, 0, -1, NULL, "file header at offset 0 is corrupted (bad magic)");
    } else {
      file_error(x, 0, -1, NULL,
                 n < 8 ? "not an Elastic Lite checkpoint: only %u bytes"
                       : "not an Elastic Lite checkpoint (no checkpoint magic at offset 0; "
                         "%u bytes)",
                 (uint64_t)n);
      fatal = 1;
    }
  } else if (n < EL_HEADER_FIXED + 4) {
    file_error(x, n, -1, NULL, "file is truncated inside its header (%u bytes)", (uint64_t)n);
    fatal = 1;
  } else {
    major = el_ld16(p + 8);
    minor = el_ld16(p + 10);
    hlen = el_ld32(p + 12);
    int crc_ok = hlen >= EL_HEADER_FIXED + 4 && hlen <= n &&
                 el_crc32c(0, p, hlen - 4) == el_ld32(p + hlen - 4);
    if (major > EL_FORMAT_MAJOR && !(footer_v1 && !crc_ok)) {
      file_error(x, 8, -1, NULL,
                 "checkpoint format %u is newer than this reader supports (%u); upgrade "
                 "elastic-lite",
                 (uint64_t)major, (uint64_t)EL_FORMAT_MAJOR);
      fatal = newer = 1;
    } else if (!crc_ok) {
      file_error(x, 0, -1, NULL,
                 hlen > n ? "file header at offset 0 is truncated or corrupted (header length "
                            "%u, file %u bytes)"
                          : "file header at offset 0 is corrupted (checksum mismatch; header "
                            "length %u, file %u bytes)",
                 (uint64_t)hlen, (uint64_t)n);
    } else if (major == 0) {
      file_error(x, 8, -1, NULL, "checkpoint format 0 does not exist (corrupted header?)");
      fatal = 1;
    } else if ((uint32_t)el_ld16(p + 28) + el_ld16(p + 30) > hlen - EL_HEADER_FIXED - 4) {
      file_error(x, 28, -1, NULL, "file header strings overflow the header (corrupted)");
    } else {
      header_ok = 1;
      records_from = hlen;
    }
  }

  if (!fatal) {
    size_t index_at;
    uint64_t *offs = NULL;
    uint32_t cnt = 0;
    if (read_index(x, records_from, &index_at, &offs, &cnt)) {
      for (uint32_t i = 0; i < cnt; i++) {
        size_t next;
        size_t limit = i + 1 < cnt ? (size_t)offs[i + 1] : index_at;
        read_record(x, (size_t)offs[i], limit, (int64_t)i, 1, &next);
      }
      free(offs);
    } else {
      /* footer or index unusable: the index (if intact) still bounds the records */
      scan_records(x, header_ok ? records_from : 8, index_at);
    }
  }

  el_buf b = {0};
  el_buf_puts(&b, x->ok ? "{\"ok\":true" : "{\"ok\":false");
  el_buf_puts(&b, ",\"format_version\":");
  if (header_ok) {
    el_buf_u64(&b, major);
    el_buf_puts(&b, ",\"format_minor\":");
    el_buf_u64(&b, minor);
    size_t pl = el_ld16(p + 28), ql = el_ld16(p + 30);
    el_buf_puts(&b, ",\"producer\":");
    el_buf_json_str(&b, p + EL_HEADER_FIXED, pl);
    el_buf_puts(&b, ",\"python\":");
    el_buf_json_str(&b, p + EL_HEADER_FIXED + pl, ql);
    el_buf_puts(&b, ",\"created_ms\":");
    el_buf_i64(&b, (int64_t)el_ld64(p + 16));
  } else if (newer) {
    el_buf_u64(&b, major);
    el_buf_puts(&b, ",\"format_minor\":");
    el_buf_u64(&b, minor);
    el_buf_puts(&b, ",\"producer\":null,\"python\":null,\"created_ms\":null");
  } else {
    el_buf_puts(&b, "null,\"format_minor\":null,\"producer\":null,\"python\":null,\"created_ms\":null");
  }
  el_buf_puts(&b, ",\"size\":");
  el_buf_u64(&b, n);
  el_buf_puts(&b, ",\"error\":");
  if (x->has_err)
    el_error_json(&b, x->msg, x->eoff, x->erec, x->eop);
  else
    el_buf_puts(&b, "null");
  el_buf_puts(&b, ",\"records\":[");
  if (x->recs.len) el_buf_put(&b, x->recs.data, x->recs.len);
  if (x->recs.failed) b.failed = 1;
  el_buf_puts(&b, "]}");
  el_buf_free(&x->recs);
  return make_result(&b, x->ok);
}
