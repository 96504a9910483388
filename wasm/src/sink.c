/* Rewindable sink: a growable byte buffer with nested marks.
 *
 * Growth policy (bounded overhead): capacity starts at 64 KiB, doubles while below 64 MiB,
 * then grows by 25% per step; a step is never smaller than what the write needs. So the
 * unused tail is at most the size of the data below 64 MiB and at most a quarter above it.
 * An optional limit (el_sink_set_limit) caps the size; reaching it, or a failed realloc, is
 * an EL_ENOMEM error that leaves the sink's content and marks unchanged.
 *
 * Rewind only moves the size back (no copy, no shrink): the next writes reuse the space. */
#include <stdlib.h>

#include "internal.h"

#define SINK_INITIAL ((size_t)64 << 10)
#define SINK_DOUBLE_UNTIL ((size_t)64 << 20)

struct el_sink {
  uint8_t *data;
  size_t size, cap, limit;
  size_t *marks; /* positions of open marks, innermost last */
  size_t nmarks, mcap;
  char err[EL_ERRMSG];
};

el_sink *el_sink_new(void) {
  el_sink *s = calloc(1, sizeof *s);
  if (!s) el_set_last_error("out of memory: could not allocate a sink");
  return s;
}

void el_sink_free(el_sink *s) {
  if (!s) return;
  free(s->data);
  free(s->marks);
  free(s);
}

const char *el_sink_error(const el_sink *s) { return s ? s->err : "no sink (NULL)"; }
const uint8_t *el_sink_data(const el_sink *s) { return s ? s->data : NULL; }
size_t el_sink_size(const el_sink *s) { return s ? s->size : 0; }
int el_sink_depth(const el_sink *s) { return s ? (int)s->nmarks : 0; }

int el_sink_set_limit(el_sink *s, size_t max_bytes) {
  if (!s) return EL_EINVAL;
  s->limit = max_bytes;
  return EL_OK;
}

/* Makes room for n more bytes. */
static int sink_grow(el_sink *s, size_t n) {
  size_t max = s->limit ? s->limit : SIZE_MAX / 2;
  if (n > max || s->size > max - n) {
    el_fmt(s->err, sizeof s->err,
           "sink limit reached: %u bytes written, %u more requested, limit %u bytes",
           (uint64_t)s->size, (uint64_t)n, (uint64_t)max);
    return EL_ENOMEM;
  }
  if (n <= s->cap - s->size) return EL_OK;
  size_t need = s->size + n;
  size_t cap = s->cap ? s->cap : SINK_INITIAL;
  while (cap < need) {
    size_t step = cap < SINK_DOUBLE_UNTIL ? cap : cap / 4;
    cap = cap > max - step ? max : cap + step;
  }
  uint8_t *d = realloc(s->data, cap);
  if (!d) {
    el_fmt(s->err, sizeof s->err,
           "out of memory: could not grow the sink from %u to %u bytes (%u bytes written)",
           (uint64_t)s->cap, (uint64_t)cap, (uint64_t)s->size);
    return EL_ENOMEM;
  }
  s->data = d;
  s->cap = cap;
  return EL_OK;
}

int el_sink_append(el_sink *s, const uint8_t *p, size_t n) {
  if (!s || (!p && n)) return EL_EINVAL;
  int rc = sink_grow(s, n);
  if (rc) return rc;
  if (n) memcpy(s->data + s->size, p, n);
  s->size += n;
  return EL_OK;
}

uint8_t *el_sink_reserve(el_sink *s, size_t n) {
  if (!s) return NULL;
  if (sink_grow(s, n ? n : 1)) return NULL; /* n=0 still returns a usable pointer */
  uint8_t *p = s->data + s->size;
  s->size += n;
  return p;
}

int el_sink_mark(el_sink *s) {
  if (!s) return EL_EINVAL;
  if (s->nmarks == s->mcap) {
    if (s->mcap >= (size_t)1 << 24) {
      el_fmt(s->err, sizeof s->err, "too many nested marks (%u)", (uint64_t)s->nmarks);
      return EL_ENOMEM;
    }
    size_t mcap = s->mcap ? s->mcap * 2 : 8;
    size_t *m = realloc(s->marks, mcap * sizeof *m);
    if (!m) {
      el_fmt(s->err, sizeof s->err, "out of memory: could not open mark %u",
             (uint64_t)s->nmarks);
      return EL_ENOMEM;
    }
    s->marks = m;
    s->mcap = mcap;
  }
  s->marks[s->nmarks] = s->size;
  return (int)s->nmarks++;
}

static int check_mark(el_sink *s, int mark) {
  if (mark < 0 || (size_t)mark >= s->nmarks) {
    el_fmt(s->err, sizeof s->err, "mark %d is not open (%u marks open)", (int64_t)mark,
           (uint64_t)s->nmarks);
    return EL_EINVAL;
  }
  return EL_OK;
}

int el_sink_rewind(el_sink *s, int mark) {
  if (!s) return EL_EINVAL;
  int rc = check_mark(s, mark);
  if (rc) return rc;
  s->size = s->marks[mark];
  s->nmarks = (size_t)mark;
  return EL_OK;
}

int el_sink_commit(el_sink *s, int mark) {
  if (!s) return EL_EINVAL;
  int rc = check_mark(s, mark);
  if (rc) return rc;
  s->nmarks = (size_t)mark;
  return EL_OK;
}

/* ---- for the writer (internal.h) ---- */

void el_sink_truncate(el_sink *s, size_t size) {
  if (size < s->size) s->size = size;
}

void el_sink_drop_front(el_sink *s, size_t n) {
  if (n > s->size) n = s->size;
  if (!n) return;
  memmove(s->data, s->data + n, s->size - n);
  s->size -= n;
}

void el_sink_release(el_sink *s, size_t keep_cap) {
  if (s->size || s->nmarks || s->cap <= keep_cap) return;
  free(s->data);
  s->data = NULL;
  s->cap = 0;
}
