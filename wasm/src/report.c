/* The inspection report as JSON (docs/INTERFACES.md), written from what reader.c parsed.
 * No parsing here: every value comes from the el_*_info structs. */
#include "reader.h"

const char *el_kind_name(unsigned kind) {
  switch (kind) {
    case EL_KIND_DATA: return "data";
    case EL_KIND_MANIFEST: return "manifest";
    case EL_KIND_HISTORY: return "history";
    default: return NULL;
  }
}

const char *el_serializer_name(unsigned s) {
  switch (s) {
    case EL_SER_PICKLE: return "pickle";
    case EL_SER_CLOUDPICKLE: return "cloudpickle";
    case EL_SER_DILL: return "dill";
    default: return NULL;
  }
}

void el_problem_set(el_problem *pb, const char *code, uint64_t offset, int64_t record,
                    const char *opcode, const char *fmt, ...) {
  if (pb->set) return; /* the first problem is the one reported */
  pb->set = 1;
  pb->code = code;
  pb->offset = offset;
  pb->record = record;
  pb->opcode = opcode;
  va_list ap;
  va_start(ap, fmt);
  el_vfmt(pb->message, sizeof pb->message, fmt, ap);
  va_end(ap);
}

static void put_key(el_buf *b, const char *key) {
  el_buf_puts(b, ",\"");
  el_buf_puts(b, key);
  el_buf_puts(b, "\":");
}

static void put_u64_or_null(el_buf *b, const char *key, int have, uint64_t v) {
  put_key(b, key);
  if (have)
    el_buf_u64(b, v);
  else
    el_buf_puts(b, "null");
}

static void put_hex_or_null(el_buf *b, const char *key, int have, uint32_t v) {
  put_key(b, key);
  if (!have) {
    el_buf_puts(b, "null");
    return;
  }
  el_buf_puts(b, "\"");
  el_buf_hex32(b, v);
  el_buf_puts(b, "\"");
}

static void put_str_or_null(el_buf *b, const char *key, const char *s) {
  put_key(b, key);
  if (s)
    el_buf_json_cstr(b, s);
  else
    el_buf_puts(b, "null");
}

static void put_problem(el_buf *b, const el_problem *pb) {
  if (pb->set)
    el_error_json(b, pb->code, pb->message, pb->offset, pb->record, pb->opcode);
  else
    el_buf_puts(b, "null");
}

static void put_names(el_buf *b, const el_rec_info *r) {
  el_buf_puts(b, ",\"names\":[");
  if (r->header_ok) {
    const uint8_t *nm = r->h.names;
    size_t n = r->h.names_len, i = 0, k = 0;
    while (i < n) {
      size_t j = i;
      while (j < n && nm[j]) j++;
      if (k++) el_buf_puts(b, ",");
      el_buf_json_str(b, nm + i, j - i);
      i = j + 1;
    }
  }
  el_buf_puts(b, "]");
}

static void put_buffers(el_buf *b, const el_rec_info *r) {
  el_buf_puts(b, ",\"buffers\":[");
  for (uint32_t i = 0; r->buffers && i < r->h.nbuffers; i++) {
    const el_buffer_entry *e = &r->buffers[i];
    el_buf_puts(b, i ? ",{\"index\":" : "{\"index\":");
    el_buf_u64(b, i);
    put_key(b, "offset");
    el_buf_u64(b, r->offset + e->offset);
    put_key(b, "length");
    el_buf_u64(b, e->length);
    put_hex_or_null(b, "crc32", 1, e->crc);
    put_key(b, "ok");
    el_buf_puts(b, e->checked < 0 ? "null" : e->checked ? "true" : "false");
    el_buf_puts(b, "}");
  }
  el_buf_puts(b, "]");
}

void el_report_record(el_buf *b, const el_rec_info *r, int first) {
  int hk = r->header_ok;
  const el_rec_header *h = &r->h;
  el_buf_puts(b, first ? "{\"index\":" : ",{\"index\":");
  el_buf_i64(b, r->index);
  put_str_or_null(b, "kind", hk ? el_kind_name(h->kind) : NULL);
  put_u64_or_null(b, "kind_code", hk, h->kind);
  put_names(b, r);
  put_str_or_null(b, "serializer", hk ? el_serializer_name(h->serializer) : NULL);
  put_key(b, "offset");
  el_buf_u64(b, r->offset);
  put_u64_or_null(b, "record_length", hk, h->record_len);
  put_u64_or_null(b, "payload_offset", hk, r->offset + h->header_len);
  put_u64_or_null(b, "length", hk, h->stream_len);
  put_hex_or_null(b, "crc32c", hk && h->version == 1, h->stream_crc);
  put_hex_or_null(b, "crc32", hk && h->version == 2, h->stream_crc);
  put_buffers(b, r);
  el_buf_puts(b, r->error.set ? ",\"ok\":false,\"error\":" : ",\"ok\":true,\"error\":");
  put_problem(b, &r->error);
  put_key(b, "globals");
  if (r->validated)
    el_pickle_globals_json(b, &r->pickle);
  else
    el_buf_puts(b, "null");
  put_key(b, "imports");
  if (r->validated)
    el_pickle_imports_json(b, &r->pickle);
  else
    el_buf_puts(b, "null");
  el_buf_puts(b, "}");
}

void el_report_file(el_buf *b, int ok, const el_file_info *f, const el_problem *err,
                    const el_buf *records) {
  el_buf_puts(b, ok ? "{\"ok\":true" : "{\"ok\":false");
  int known = f->header_ok || f->newer;
  put_u64_or_null(b, "format_version", known, f->major);
  put_u64_or_null(b, "format_minor", known, f->minor);
  put_key(b, "producer");
  if (f->header_ok)
    el_buf_json_str(b, f->producer, f->producer_len);
  else
    el_buf_puts(b, "null");
  put_key(b, "python");
  if (f->header_ok)
    el_buf_json_str(b, f->python, f->python_len);
  else
    el_buf_puts(b, "null");
  put_key(b, "created_ms");
  if (f->header_ok)
    el_buf_i64(b, f->created_ms);
  else
    el_buf_puts(b, "null");
  put_key(b, "size");
  el_buf_u64(b, f->size);
  put_u64_or_null(b, "index_offset", f->has_index, f->index_offset);
  put_key(b, "error");
  put_problem(b, err);
  el_buf_puts(b, ",\"records\":[");
  if (records->len) el_buf_put(b, records->data, records->len);
  if (records->failed) b->failed = 1;
  el_buf_puts(b, "]}");
}
