/* Names a pickle stream uses: each distinct string interned once (so a stream that names
 * one long string many times costs time linear in its size), the globals it imports, and
 * the small hash map the validator uses for its memo and literals. */
#include <stdlib.h>

#include "pickle.h"

/* ---- hash map ------------------------------------------------------------------------- */

static size_t hslot(uint64_t key, size_t cap) {
  uint64_t h = key * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & (cap - 1);
}

int el_map_put(el_u64map *m, uint64_t key, uint64_t val, int *added) {
  if (2 * (m->count + 1) > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *k = malloc(cap * sizeof *k), *x = malloc(cap * sizeof *x);
    if (!k || !x) {
      free(k);
      free(x);
      return 0;
    }
    memset(k, 0xFF, cap * sizeof *k);
    for (size_t i = 0; i < m->cap; i++) {
      if (m->keys[i] == EL_MAP_NONE) continue;
      size_t s = hslot(m->keys[i], cap);
      while (k[s] != EL_MAP_NONE) s = (s + 1) & (cap - 1);
      k[s] = m->keys[i];
      x[s] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = k;
    m->vals = x;
    m->cap = cap;
  }
  size_t s = hslot(key, m->cap);
  while (m->keys[s] != EL_MAP_NONE && m->keys[s] != key) s = (s + 1) & (m->cap - 1);
  *added = m->keys[s] == EL_MAP_NONE;
  if (*added) m->count++;
  m->keys[s] = key;
  m->vals[s] = val;
  return 1;
}

uint64_t el_map_get(const el_u64map *m, uint64_t key) {
  if (!m->cap) return EL_MAP_NONE;
  size_t s = hslot(key, m->cap);
  while (m->keys[s] != EL_MAP_NONE) {
    if (m->keys[s] == key) return m->vals[s];
    s = (s + 1) & (m->cap - 1);
  }
  return EL_MAP_NONE;
}

void el_map_free(el_u64map *m) {
  free(m->keys);
  free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->count = 0;
}

/* ---- interned strings -------------------------------------------------------------------- */

static uint64_t fnv(const uint8_t *s, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; i++) h = (h ^ s[i]) * 0x100000001B3ull;
  return h;
}
#define FNV_START 0xCBF29CE484222325ull

size_t el_intern_tail(el_names *t, el_pickle_report *r, size_t start) {
  el_buf *a = &r->arena;
  if (!a->data) el_buf_put(a, "", 0); /* allocates: empty names must not index a NULL arena */
  if (a->failed) return SIZE_MAX;
  const uint8_t *str = (const uint8_t *)a->data + start;
  size_t len = a->len - start;
  if (2 * (r->nstrings + 1) > t->stab_cap) { /* rehash into a table twice as big */
    size_t cap = t->stab_cap ? t->stab_cap * 2 : 64;
    size_t *tab = calloc(cap, sizeof *tab);
    if (!tab) return SIZE_MAX;
    for (size_t i = 0; i < r->nstrings; i++) {
      size_t s = (size_t)fnv((const uint8_t *)a->data + r->soff[i], r->slen[i], FNV_START) & (cap - 1);
      while (tab[s]) s = (s + 1) & (cap - 1);
      tab[s] = i + 1;
    }
    free(t->stab);
    t->stab = tab;
    t->stab_cap = cap;
  }
  size_t s = (size_t)fnv(str, len, FNV_START) & (t->stab_cap - 1);
  while (t->stab[s]) {
    size_t i = t->stab[s] - 1;
    if (r->slen[i] == len && !memcmp(a->data + r->soff[i], str, len)) {
      a->len = start; /* seen before */
      return i;
    }
    s = (s + 1) & (t->stab_cap - 1);
  }
  if (r->nstrings == r->scap) {
    size_t c1 = r->scap, c2 = r->scap;
    if (!el_grow((void **)&r->soff, &c1, r->nstrings + 1, sizeof(size_t)) ||
        !el_grow((void **)&r->slen, &c2, r->nstrings + 1, sizeof(size_t)))
      return SIZE_MAX;
    r->scap = c1 < c2 ? c1 : c2;
  }
  size_t id = r->nstrings++;
  r->soff[id] = start;
  r->slen[id] = len;
  t->stab[s] = id + 1;
  return id;
}

size_t el_intern(el_names *t, el_pickle_report *r, const uint8_t *s, size_t n) {
  size_t start = r->arena.len;
  el_buf_put(&r->arena, s, n);
  return el_intern_tail(t, r, start);
}

/* ---- imports ------------------------------------------------------------------------------ */

static uint64_t import_hash(const el_import *m) {
  uint64_t h = ((uint64_t)m->module << 32 | m->name) * 0x9E3779B97F4A7C15ull;
  uint64_t tag = (uint64_t)m->opcode << 8 | (uint64_t)(unsigned)m->proto;
  return h ^ tag ^ ((uint64_t)m->ext * 0x100000001B3ull);
}

static int same_import(const el_import *a, const el_import *b) {
  return a->module == b->module && a->name == b->name && a->opcode == b->opcode &&
         a->proto == b->proto && a->ext == b->ext;
}

/* Adds m to r->imports unless an equal one is there; *index: its entry. 0 if out of memory. */
static int add_import_entry(el_names *t, el_pickle_report *r, const el_import *m, size_t *index) {
  if (2 * (r->nimports + 1) > t->itab_cap) {
    size_t cap = t->itab_cap ? t->itab_cap * 2 : 32;
    size_t *tab = calloc(cap, sizeof *tab);
    if (!tab) return 0;
    for (size_t i = 0; i < r->nimports; i++) {
      size_t s = (size_t)import_hash(&r->imports[i]) & (cap - 1);
      while (tab[s]) s = (s + 1) & (cap - 1);
      tab[s] = i + 1;
    }
    free(t->itab);
    t->itab = tab;
    t->itab_cap = cap;
  }
  size_t s = (size_t)import_hash(m) & (t->itab_cap - 1);
  while (t->itab[s]) {
    if (same_import(&r->imports[t->itab[s] - 1], m)) {
      *index = t->itab[s] - 1;
      return 1;
    }
    s = (s + 1) & (t->itab_cap - 1);
  }
  if (!el_grow((void **)&r->imports, &r->icap, r->nimports + 1, sizeof *r->imports)) return 0;
  *index = r->nimports;
  r->imports[r->nimports] = *m;
  t->itab[s] = ++r->nimports;
  return 1;
}

/* Adds (module, name) to the distinct pairs ("globals" of the report) unless seen. */
static int add_pair(el_names *t, el_pickle_report *r, size_t mid, size_t nid) {
  int added;
  if (!el_map_put(&t->pairs, ((uint64_t)mid << 32) | nid, 0, &added)) return 0;
  if (!added) return 1;
  if (r->nglobals == r->gcap) {
    size_t c = 2 * r->gcap;
    if (!el_grow((void **)&r->gpair, &c, 2 * (r->nglobals + 1), sizeof(size_t))) return 0;
    r->gcap = c / 2;
  }
  r->gpair[2 * r->nglobals] = mid;
  r->gpair[2 * r->nglobals + 1] = nid;
  r->nglobals++;
  return 1;
}

int el_add_import(el_names *t, el_pickle_report *r, size_t mid, size_t nid, unsigned op,
                  int proto, int64_t ext, size_t *index) {
  if (mid == SIZE_MAX || nid == SIZE_MAX) return 0;
  if ((uint64_t)mid > 0xFFFFFFFFu || (uint64_t)nid > 0xFFFFFFFFu) return -1;
  el_import m = {mid, nid, op, proto, ext, 0};
  return add_pair(t, r, mid, nid) && add_import_entry(t, r, &m, index);
}

void el_names_free(el_names *t) {
  el_map_free(&t->pairs);
  free(t->stab);
  free(t->itab);
  t->stab = t->itab = NULL;
  t->stab_cap = t->itab_cap = 0;
}
