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
 * - Pointers returned by el_sink_data/el_sink_reserve/el_writer_data are valid until the next
 *   call that writes to the same sink or writer (the buffer may move when it grows; in
 *   WebAssembly memory.buffer may be replaced: re-create views after every call).
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

/* Container format version written by this library; readers accept every minor of this
 * major and refuse newer majors with a clear message. */
#define EL_FORMAT_MAJOR 1
#define EL_FORMAT_MINOR 0

/* Serializer codes stored in each record. */
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

/* ---- Container writer -----------------------------------------------------------------
 * el_writer_new writes the file header. Per variable group:
 *   el_writer_begin_record(names) -> payload bytes via el_writer_append / el_writer_reserve
 *   -> el_writer_end_record(serializer)
 * or el_writer_abort_record(), which rewinds the sink to where the record began: the whole
 * record (header and the failed attempt's bytes) is gone and no record is open; begin the
 * record again to retry with another serializer. el_writer_finish writes index and footer. */
typedef struct el_writer el_writer;
/* producer and python_version: NUL-terminated UTF-8 (NULL = ""), at most 65535 bytes. */
EL_API el_writer *el_writer_new(const char *producer, const char *python_version,
                                double created_ms);
EL_API void el_writer_free(el_writer *w);
/* names: UTF-8 variable names separated by NUL bytes (a trailing NUL is allowed). */
EL_API int el_writer_begin_record(el_writer *w, const uint8_t *names, size_t names_len);
EL_API int el_writer_append(el_writer *w, const uint8_t *p, size_t n);
EL_API uint8_t *el_writer_reserve(el_writer *w, size_t n); /* NULL on error */
EL_API int el_writer_abort_record(el_writer *w);
EL_API int el_writer_end_record(el_writer *w, int serializer);
EL_API int el_writer_finish(el_writer *w);
EL_API int el_writer_record_count(const el_writer *w);
EL_API const uint8_t *el_writer_data(const el_writer *w);
EL_API size_t el_writer_size(const el_writer *w);
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

/* CRC32C (Castagnoli) of buf, continuing from crc (start with 0). */
EL_API uint32_t el_crc32c(uint32_t crc, const uint8_t *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
