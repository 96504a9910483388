/*
 * Elastic Lite C core: rewindable sink, checkpoint container, pickle stream validator.
 *
 * The same code builds as a native shared library (host CPython loads it by ctypes) and as a
 * standalone WebAssembly module that imports nothing (browser, web worker, Node, Pyodide).
 *
 * Conventions
 * - Functions returning int return 0 (EL_OK) on success and a negative EL_E* code on error.
 * - Every handle keeps the message of its last error (el_sink_error, el_writer_error); the
 *   handle-less functions (el_*_new, el_inspect, el_validate_pickle) leave theirs in
 *   el_last_error(). Messages are NUL-terminated UTF-8, valid until the next call on the same
 *   handle (or, for el_last_error, the next handle-less call).
 * - Pointers returned by el_sink_data/el_sink_reserve/el_writer_reserve and the parts of
 *   el_writer_take are valid until the next call that writes to the same sink or writer (the
 *   buffer may move when it grows; in WebAssembly memory.buffer may be replaced: re-create
 *   views after every call).
 * - Handles are not thread-safe; use one handle from one thread at a time. el_last_error is
 *   one process-wide buffer (WebAssembly and the ctypes backend are single-threaded here).
 * - The .wasm exports _initialize (a no-op today: the core has no constructors); embedders
 *   may call it once after instantiation, as WASI reactors expect.
 * - Timestamps cross the API as double (milliseconds since the epoch): exact to 2^53 and a
 *   plain JS number / Python float, so no BigInt is needed at the WebAssembly boundary.
 *
 * The container format is documented byte by byte in wasm/FORMAT.md.
 */
#ifndef ELASTIC_LITE_H
#define ELASTIC_LITE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__EMSCRIPTEN__)
#define EL_API __attribute__((used, visibility("default")))
#elif defined(__GNUC__)
#define EL_API __attribute__((visibility("default")))
#else
#define EL_API
#endif

/* Status codes. */
#define EL_OK 0
#define EL_ENOMEM (-1)  /* allocation failed or a size limit was reached */
#define EL_EINVAL (-2)  /* bad argument (NULL, out-of-range serializer, unknown mark...) */
#define EL_ESTATE (-3)  /* call not allowed now (record not open, writer finished...) */
#define EL_EFORMAT (-4) /* bad input bytes */

/* Problem codes: the "code" of every error object the core reports (inspection and read
 * reports, docs/INTERFACES.md). Machine-readable and the same in C, JS and Python: hosts
 * classify problems by these strings, never by message text (JS: CORE_CODES of
 * js/shared/report.mjs, checked against this list by tests/node/core-codes.test.mjs). */
#define EL_CODE_NOT_CHECKPOINT "not-checkpoint" /* no checkpoint magic, no footer */
#define EL_CODE_NEWER "newer-format"            /* a major version this reader does not know */
#define EL_CODE_TRUNCATED "truncated"           /* bytes missing at the end */
#define EL_CODE_CHECKSUM "checksum"             /* a CRC does not match */
#define EL_CODE_STRUCTURE "structure"           /* impossible lengths, offsets, magic, padding */
#define EL_CODE_PICKLE "pickle"                 /* the pickle stream validator refused it */
#define EL_CODE_NOMEM "nomem"                   /* ran out of memory while reading */
#define EL_CODE_UNKNOWN_KIND "unknown-kind"     /* record kind of a newer version */
#define EL_CODE_UNKNOWN_SERIALIZER "unknown-serializer" /* serializer code of a newer version */

/* Container format version written by this library; readers accept every minor of majors
 * 1 and 2 and refuse newer majors with a clear message. */
#define EL_FORMAT_MAJOR 2
#define EL_FORMAT_MINOR 0
#define EL_FORMAT_OLDEST_MAJOR 1 /* readers also read every 1.x file */

/* Serializer codes stored in each data record. */
#define EL_SER_PICKLE 1
#define EL_SER_CLOUDPICKLE 2
#define EL_SER_DILL 3

/* el_inspect flags. */
#define EL_INSPECT_VALIDATE 1     /* validate each record's pickle stream, list its globals */
#define EL_INSPECT_HEADERS_ONLY 2 /* list records without reading payloads (no payload CRC) */

/* Library version string, e.g. "0.1.0". */
EL_API const char *el_version(void);
/* Message of the last error of a handle-less call ("" if none). */
EL_API const char *el_last_error(void);

/* Plain allocation for callers that must place bytes in this library's memory (WebAssembly
 * callers copy input into el_malloc'ed space). */
EL_API void *el_malloc(size_t n);
EL_API void el_free(void *p);

/* ---- Rewindable sink ------------------------------------------------------------------
 * A growable byte buffer. Capacity doubles up to 64 MiB, then grows by 25% steps (always at
 * least what is needed), so memory overhead stays bounded; el_sink_set_limit caps the size.
 * Marks nest: el_sink_mark returns an id (its depth); el_sink_rewind(id) truncates to the
 * mark's position without copying and closes that mark and every mark opened after it;
 * el_sink_commit(id) keeps the bytes and closes the same marks. */
typedef struct el_sink el_sink;
EL_API el_sink *el_sink_new(void);
EL_API void el_sink_free(el_sink *s);
EL_API int el_sink_append(el_sink *s, const uint8_t *p, size_t n);
/* Appends n bytes of unspecified content and returns where they start, so the caller copies
 * into the sink directly (one copy). NULL on error (see el_sink_error). */
EL_API uint8_t *el_sink_reserve(el_sink *s, size_t n);
EL_API int el_sink_mark(el_sink *s); /* >= 0: mark id; < 0: error */
EL_API int el_sink_rewind(el_sink *s, int mark);
EL_API int el_sink_commit(el_sink *s, int mark);
EL_API int el_sink_depth(const el_sink *s); /* number of open marks */
EL_API int el_sink_set_limit(el_sink *s, size_t max_bytes); /* 0 = no limit but memory */
EL_API const uint8_t *el_sink_data(const el_sink *s);
EL_API size_t el_sink_size(const el_sink *s);
EL_API const char *el_sink_error(const el_sink *s);

/* ---- Container writer (format 2.0, wasm/FORMAT.md) -----------------------------------
 * Streams a checkpoint out as it is written; the writer never holds more than what the caller
 * has not taken yet (plus the open record's header and pickle stream).
 *
 *   el_writer_new                      file header
 *   el_writer_begin_record(kind, names)
 *     el_writer_append / el_writer_reserve   the pickle stream (or JSON for kinds 2 and 3)
 *     el_writer_add_buffer(length, crc32)    an out-of-band buffer: only its length and CRC-32
 *                                            enter the core; the caller emits its bytes
 *   el_writer_end_record(serializer, crc32, flags)   or el_writer_abort_record()
 *   el_writer_add_stored_record(length)   a record whose bytes the caller already has stored
 *   el_writer_finish                    index and footer
 *
 * At any time el_writer_take() hands out the next part of the file, in file order: bytes
 * of the core (header, record headers, streams, buffer tables, zero padding, index, footer),
 * or the place of an out-of-band buffer or of a stored record, whose bytes the caller writes
 * itself. Writing the parts one after the other gives the container. abort_record drops the
 * whole open record (a failed serializer attempt) without a copy; begin it again to retry. */
#define EL_KIND_DATA 1     /* pickle stream of the group's values (+ out-of-band buffers) */
#define EL_KIND_MANIFEST 2 /* UTF-8 JSON, serializer EL_SER_NONE */
#define EL_KIND_HISTORY 3  /* UTF-8 JSON (session history), serializer EL_SER_NONE */
#define EL_SER_NONE 0

#define EL_END_COMPUTE_CRC 1 /* el_writer_end_record: the core computes the stream CRC-32 */

#define EL_PART_NONE 0   /* nothing to hand out now */
#define EL_PART_BYTES 1  /* bytes of the core at .data */
#define EL_PART_BUFFER 2 /* the caller writes out-of-band buffer .buffer of record .record */
#define EL_PART_STORED 3 /* the caller writes the stored record .record (.length bytes) */
#define EL_PART_HEAD 0xFFFFFFFFu /* .record of the file header part */
#define EL_PART_TAIL 0xFFFFFFFEu /* .record of the index + footer part */

/* Fixed-width fields only, so the layout is the same natively and in WebAssembly (40 bytes;
 * read from wasm memory as little-endian u32 x4, u64 x3). */
typedef struct {
  uint32_t kind;   /* EL_PART_* */
  uint32_t record; /* index of the record the part belongs to, or EL_PART_HEAD / _TAIL */
  uint32_t buffer; /* EL_PART_BUFFER: index of the buffer in its record */
  uint32_t reserved;
  uint64_t offset; /* file offset of the part's first byte */
  uint64_t length; /* bytes */
  uint64_t data;   /* EL_PART_BYTES: address of the bytes (valid until the next writer call) */
} el_part;

typedef struct el_writer el_writer;
/* producer and python_version: NUL-terminated UTF-8 (NULL = ""), at most 65535 bytes. */
EL_API el_writer *el_writer_new(const char *producer, const char *python_version,
                                double created_ms);
EL_API void el_writer_free(el_writer *w);
/* kind: EL_KIND_*; names: UTF-8 variable names separated by NUL bytes (a trailing NUL is
 * allowed). */
EL_API int el_writer_begin_record(el_writer *w, int kind, const uint8_t *names,
                                  size_t names_len);
EL_API int el_writer_append(el_writer *w, const uint8_t *p, size_t n);
EL_API uint8_t *el_writer_reserve(el_writer *w, size_t n); /* NULL on error */
/* Registers out-of-band buffer (its length, CRC-32/ISO-HDLC) with the open data record, in
 * the order the pickle stream's NEXT_BUFFER opcodes use them. Returns its index (>= 0). */
EL_API int el_writer_add_buffer(el_writer *w, double length, uint32_t crc32);
EL_API int el_writer_abort_record(el_writer *w);
/* serializer: EL_SER_PICKLE/CLOUDPICKLE/DILL for data records, EL_SER_NONE for the JSON
 * kinds. stream_crc32: CRC-32/ISO-HDLC of the stream as the caller computed it while writing
 * (zlib.crc32), or flags EL_END_COMPUTE_CRC to have the core compute it. Returns the record's
 * index (>= 0). */
EL_API int el_writer_end_record(el_writer *w, int serializer, uint32_t stream_crc32, int flags);
/* A record of `length` bytes (a multiple of 64) that the caller already holds, e.g. an
 * unchanged group stored by an earlier checkpoint. Returns its index (>= 0). */
EL_API int el_writer_add_stored_record(el_writer *w, double length);
EL_API int el_writer_finish(el_writer *w);
/* The next part (kind EL_PART_NONE when there is nothing to hand out now). Taking a part
 * drops the previous one from the core. NULL only for w == NULL. */
EL_API const el_part *el_writer_take(el_writer *w);
/* Up to n parts at once into out[] (what n calls of el_writer_take would give, stopping at
 * EL_PART_NONE); returns how many. The bytes of every part handed out stay valid until the
 * next call that writes to the writer (one crossing into WebAssembly and one read of out[]
 * for a run of parts: a checkpoint that reuses a hundred stored records has as many parts). */
EL_API size_t el_writer_take_many(el_writer *w, el_part *out, size_t n);
EL_API int el_writer_record_count(const el_writer *w);
EL_API double el_writer_record_offset(const el_writer *w, int record); /* -1 if no such */
EL_API double el_writer_record_length(const el_writer *w, int record); /* -1 if no such */
EL_API double el_writer_file_size(const el_writer *w); /* bytes laid out so far */
EL_API const char *el_writer_error(const el_writer *w);

/* ---- Inspection and validation --------------------------------------------------------
 * Both return a result whose JSON is the report of docs/INTERFACES.md (UTF-8, always valid
 * JSON, also for hostile input). NULL only when memory runs out (see el_last_error). */
typedef struct el_result el_result;
EL_API el_result *el_inspect(const uint8_t *buf, size_t len, int flags);
EL_API el_result *el_validate_pickle(const uint8_t *buf, size_t len);
EL_API const char *el_result_json(const el_result *r);
EL_API size_t el_result_json_len(const el_result *r);
EL_API int el_result_ok(const el_result *r); /* 1 if the report's "ok" is true */
EL_API void el_result_free(el_result *r);

/* ---- Pull reader (reads a container without needing it whole in this library's memory) --
 * The reader says what it needs next; the caller answers from wherever the bytes are:
 *
 *   r = el_reader_new(file_size, flags, chunk)
 *   while ((k = el_reader_next(r)) != EL_NEED_DONE):
 *     off = el_reader_offset(r); len = el_reader_length(r)
 *     EL_NEED_BYTES: el_reader_feed(r, bytes [off, off+len), len)   exactly those bytes
 *     EL_NEED_CRC32: el_reader_feed_crc32(r, CRC-32/ISO-HDLC of bytes [off, off+len))
 *   report = el_reader_result(r)     the same JSON as el_inspect
 *
 * Content CRCs (2.0 streams and out-of-band buffers) are asked as EL_NEED_CRC32 so the
 * caller computes them over its own memory (zlib.crc32); with EL_READ_CORE_CRC the reader
 * asks for those bytes in chunks instead and computes them itself. Pickle streams are read
 * in windows of about `chunk` bytes (0 = 1 MiB): large opaque arguments are skipped, and a
 * window is longer only when one opcode's argument needs it. Buffer contents are never asked
 * for unless EL_READ_CORE_CRC. Flags: EL_INSPECT_VALIDATE, EL_INSPECT_HEADERS_ONLY as for
 * el_inspect, plus EL_READ_CORE_CRC. */
#define EL_READ_CORE_CRC 4
#define EL_NEED_DONE 0  /* finished: el_reader_result */
#define EL_NEED_BYTES 1 /* feed the bytes of the range */
#define EL_NEED_CRC32 2 /* feed the CRC-32/ISO-HDLC of the range */
typedef struct el_reader el_reader;
EL_API el_reader *el_reader_new(double file_size, int flags, double chunk); /* NULL: see el_last_error */
EL_API int el_reader_next(const el_reader *r);
EL_API double el_reader_offset(const el_reader *r);
EL_API double el_reader_length(const el_reader *r);
EL_API int el_reader_feed(el_reader *r, const uint8_t *p, size_t n);
EL_API int el_reader_feed_crc32(el_reader *r, uint32_t crc);
/* Instead of exactly the range asked: bytes [offset, offset+n) that hold it. The reader
 * answers that request and every later one inside them (content CRCs too, computed here)
 * before it returns; one call per window instead of one per request. */
EL_API int el_reader_feed_window(el_reader *r, double offset, const uint8_t *p, size_t n);
EL_API el_result *el_reader_result(el_reader *r); /* NULL before EL_NEED_DONE or out of memory */
EL_API const char *el_reader_error(const el_reader *r); /* why the last feed was refused */
EL_API void el_reader_free(el_reader *r);

/* ---- Resumable pickle validator (one bare stream, in windows) ----------------------------
 *   v = el_validator_new(stream_length)
 *   while (el_validator_feed(v, off, bytes, n) == 0): off = el_validator_need_offset(v) ...
 * Each feed gives stream bytes [off, off+n); the validator asks for a window starting at
 * el_validator_need_offset that should hold at least el_validator_need_length bytes. Returns
 * 1 when done (el_validator_result: the JSON of el_validate_pickle), 0 for more. */
typedef struct el_validator el_validator;
EL_API el_validator *el_validator_new(double stream_length);
EL_API int el_validator_feed(el_validator *v, double offset, const uint8_t *p, size_t n);
EL_API double el_validator_need_offset(const el_validator *v);
EL_API double el_validator_need_length(const el_validator *v);
EL_API el_result *el_validator_result(el_validator *v);
EL_API void el_validator_free(el_validator *v);

/* CRC32C (Castagnoli) of buf, continuing from crc (start with 0): small structures. */
EL_API uint32_t el_crc32c(uint32_t crc, const uint8_t *buf, size_t len);
/* CRC-32/ISO-HDLC (zlib's crc32) of buf, continuing from crc (start with 0): content. */
EL_API uint32_t el_crc32(uint32_t crc, const uint8_t *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
