/* The results API (el_result), the whole-buffer entry points el_inspect and
 * el_validate_pickle (each a loop over its resumable counterpart that answers every request
 * from the buffer), and the exported validator handle. */
#include <stdlib.h>

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

/* Takes over b's text. NULL (and b freed) when out of memory. */
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

void el_pickle_report_json(el_buf *b, const el_pickle_report *pr, uint64_t size) {
  el_buf_puts(b, pr->ok ? "{\"ok\":true,\"error\":" : "{\"ok\":false,\"error\":");
  if (pr->ok)
    el_buf_puts(b, "null");
  else
    el_error_json(b, pr->nomem ? EL_CODE_NOMEM : EL_CODE_PICKLE, pr->message, pr->offset, -1,
                  pr->opcode);
  el_buf_puts(b, ",\"globals\":");
  el_pickle_globals_json(b, pr);
  el_buf_puts(b, ",\"imports\":");
  el_pickle_imports_json(b, pr);
  el_buf_puts(b, ",\"protocol\":");
  el_buf_u64(b, (uint64_t)pr->protocol);
  el_buf_puts(b, ",\"buffers\":");
  el_buf_u64(b, pr->buffers_used);
  el_buf_puts(b, ",\"size\":");
  el_buf_u64(b, size);
  el_buf_puts(b, "}");
}

el_result *el_validate_pickle(const uint8_t *buf, size_t len) {
  el_pickle_report pr;
  el_pickle_validate(buf, len, &pr);
  el_buf b = {0};
  el_pickle_report_json(&b, &pr, len);
  el_pickle_report_free(&pr);
  return make_result(&b, pr.ok);
}

el_result *el_reader_result(el_reader *r) {
  el_buf b = {0};
  if (!r || !el_reader_report(r, &b)) {
    el_set_last_error("the reader is not done: answer what el_reader_next asks first");
    return NULL;
  }
  return make_result(&b, el_reader_ok(r));
}

el_result *el_inspect(const uint8_t *buf, size_t len, int flags) {
  size_t n = buf ? len : 0;
  /* one window per stream: the validator never has to ask twice */
  el_reader *r = el_reader_new((double)n, flags & (EL_INSPECT_VALIDATE | EL_INSPECT_HEADERS_ONLY),
                               (double)(n > 64 ? n : 64));
  if (!r) return NULL;
  if (el_reader_next(r) != EL_NEED_DONE) el_reader_feed_window(r, 0, buf, n); /* answers all */
  el_result *res = el_reader_result(r);
  el_reader_free(r);
  return res;
}

/* ---- the validator handle ---- */

el_validator *el_validator_new(double stream_length) {
  if (!(stream_length >= 0 && stream_length <= 9007199254740992.0)) {
    el_set_last_error("stream length must be a whole number of bytes (up to 2^53)");
    return NULL;
  }
  el_pv *v = el_pv_new((uint64_t)stream_length);
  if (!v) el_set_last_error("out of memory: could not allocate a validator");
  return v;
}

int el_validator_feed(el_validator *v, double offset, const uint8_t *p, size_t n) {
  if (!v || !(offset >= 0)) return EL_EINVAL;
  return el_pv_feed(v, (uint64_t)offset, p, n);
}

double el_validator_need_offset(const el_validator *v) {
  uint64_t off = 0, len = 0;
  if (v) el_pv_need(v, &off, &len);
  return (double)off;
}

double el_validator_need_length(const el_validator *v) {
  uint64_t off = 0, len = 0;
  if (v) el_pv_need(v, &off, &len);
  return (double)len;
}

el_result *el_validator_result(el_validator *v) {
  if (!v) return NULL;
  el_buf b = {0};
  el_pickle_report *pr = el_pv_report(v);
  el_pickle_report_json(&b, pr, el_pv_stream_length(v));
  return make_result(&b, pr->ok);
}

void el_validator_free(el_validator *v) { el_pv_free(v); }
