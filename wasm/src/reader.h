/* What the container reader finds, as plain structs: reader.c parses into them, report.c
 * writes them as the JSON report of docs/INTERFACES.md. Nothing here is exported. */
#ifndef EL_READER_H
#define EL_READER_H

#include "internal.h"

/* One problem: the first one found is kept (file level and per record). */
typedef struct {
  int set;
  const char *code; /* EL_CODE_* */
  char message[EL_ERRMSG];
  uint64_t offset;
  int64_t record; /* -1: none */
  const char *opcode;
} el_problem;

void el_problem_set(el_problem *pb, const char *code, uint64_t offset, int64_t record,
                    const char *opcode, const char *fmt, ...);

/* A parsed record header, 1.0 or 2.0 (fields a version lacks are 0). */
typedef struct {
  unsigned version;
  uint32_t header_len;     /* K */
  unsigned kind;           /* 1.0: always data */
  unsigned serializer;
  uint32_t stored_index;   /* 1.0 only */
  uint32_t nbuffers;       /* M */
  uint64_t stream_len;     /* S (1.0: payload length L) */
  uint64_t record_len;     /* K + B (1.0: K + L) */
  uint32_t stream_crc;     /* 2.0: CRC-32; 1.0: CRC32C */
  const uint8_t *names;
  uint32_t names_len;
} el_rec_header;

typedef struct {
  uint64_t offset; /* from the record's first byte */
  uint64_t length;
  uint32_t crc;
  int checked; /* -1 not checked, 0 mismatch, 1 good */
} el_buffer_entry;

typedef struct {
  int64_t index;   /* position in the file */
  uint64_t offset; /* R */
  int header_ok;
  el_rec_header h;
  el_buffer_entry *buffers; /* h.nbuffers entries when the table was read, else NULL */
  int validated;
  el_pickle_report pickle;
  el_problem error;
} el_rec_info;

typedef struct {
  int header_ok, newer;
  unsigned major, minor;
  int64_t created_ms;
  const uint8_t *producer, *python;
  size_t producer_len, python_len;
  int has_index;
  uint64_t index_offset, size;
} el_file_info;

/* reader.c, for inspect.c: the report once the reader is done (0 before) */
int el_reader_report(el_reader *r, el_buf *b);
int el_reader_ok(const el_reader *r);

/* report.c */
void el_report_record(el_buf *b, const el_rec_info *r, int first);
void el_report_file(el_buf *b, int ok, const el_file_info *f, const el_problem *err,
                    const el_buf *records);
const char *el_kind_name(unsigned kind);
const char *el_serializer_name(unsigned serializer);

#endif
