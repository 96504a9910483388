/* Container layout (wasm/FORMAT.md), shared by the writer and the reader: every field of
 * every structure is named here once, so no byte offset is repeated as a literal elsewhere.
 * Offsets are from the first byte of the structure they belong to. */
#ifndef EL_LAYOUT_H
#define EL_LAYOUT_H

#include <stdint.h>

#define EL_ALIGN 64 /* 2.0: records and out-of-band buffers start at multiples of this */

#define EL_MAGIC "\x89" "ELCKPT\n"
#define EL_MAGIC_LEN 8
#define EL_REC_MAGIC "ELRC"
#define EL_IDX_MAGIC "ELIX"
#define EL_FOOTER_MAGIC "ELFT"
#define EL_MAGIC4_LEN 4

/* ---- file header (1.0 and 2.0) ---- */
#define EL_FH_MAGIC 0
#define EL_FH_MAJOR 8         /* u16 */
#define EL_FH_MINOR 10        /* u16 */
#define EL_FH_LENGTH 12       /* u32: H, including the CRC */
#define EL_FH_CREATED 16      /* i64 */
#define EL_FH_FLAGS 24        /* u32 */
#define EL_FH_PRODUCER_LEN 28 /* u16 */
#define EL_FH_PYTHON_LEN 30   /* u16 */
#define EL_FH_STRINGS 32      /* producer, then python version */
#define EL_FH_MIN (EL_FH_STRINGS + 4) /* fixed part + CRC32C */

/* ---- record header 1.0 ---- */
#define EL_R1_LENGTH 4       /* u32: K */
#define EL_R1_INDEX 8        /* u32 */
#define EL_R1_SERIALIZER 12  /* u8 */
#define EL_R1_FLAGS 13       /* u8 */
#define EL_R1_PAYLOAD_LEN 16 /* u64: L */
#define EL_R1_PAYLOAD_CRC 24 /* u32: CRC32C of the payload */
#define EL_R1_NAMES_LEN 28   /* u32: N */
#define EL_R1_NAMES 32
#define EL_R1_MIN (EL_R1_NAMES + 4)

/* ---- record header 2.0 ---- */
#define EL_R2_LENGTH 4      /* u32: K */
#define EL_R2_KIND 8        /* u8 */
#define EL_R2_SERIALIZER 9  /* u8 */
#define EL_R2_FLAGS 10      /* u16 */
#define EL_R2_BUFFERS 12    /* u32: M */
#define EL_R2_STREAM_LEN 16 /* u64: S */
#define EL_R2_BODY_LEN 24   /* u64: B = record length - K */
#define EL_R2_STREAM_CRC 32 /* u32: CRC-32/ISO-HDLC of the stream */
#define EL_R2_NAMES_LEN 36  /* u32: N */
#define EL_R2_NAMES 40
#define EL_R2_MIN (EL_R2_NAMES + 4)

/* ---- buffer table entry 2.0 (M entries after the stream, then the table's CRC32C) ---- */
#define EL_BT_OFFSET 0   /* u64: from the record's first byte */
#define EL_BT_LENGTH 8   /* u64 */
#define EL_BT_CRC 16     /* u32: CRC-32/ISO-HDLC of the buffer */
#define EL_BT_RESERVED 20 /* u32: 0 */
#define EL_BT_ENTRY 24
#define EL_BT_SIZE(m) ((uint64_t)(m) * EL_BT_ENTRY + 4) /* whole table with its CRC */

/* ---- index ---- */
#define EL_IX_COUNT 4 /* u32: C */
#define EL_IX_ENTRIES 8
#define EL_IX1_ENTRY 8  /* 1.0: u64 record offset */
#define EL_IX2_ENTRY 16 /* 2.0: u64 record offset, u64 record length */
#define EL_IX2_OFFSET 0
#define EL_IX2_LENGTH 8
#define EL_IX_SIZE(entry, c) (EL_IX_ENTRIES + (uint64_t)(entry) * (c) + 4)

/* ---- footer (the last 32 bytes) ---- */
#define EL_FT_COUNT 4  /* u32 */
#define EL_FT_INDEX 8  /* u64: index offset X */
#define EL_FT_SIZE 16  /* u64: file size */
#define EL_FT_MAJOR 24 /* u16 */
#define EL_FT_MINOR 26 /* u16 */
#define EL_FT_CRC 28   /* u32: CRC32C of the 28 bytes before it */
#define EL_FOOTER_SIZE 32

/* Limits the writer enforces and the reader checks. */
#define EL_MAX_NAMES_LEN 0xFFFFFFu /* 16 MiB of names per record */
#define EL_MAX_BUFFERS (1u << 20)  /* out-of-band buffers per record */
#define EL_MAX_LENGTH ((uint64_t)1 << 53) /* exact as a double at the WebAssembly boundary */

static inline uint64_t el_align_up(uint64_t v) {
  return (v + (EL_ALIGN - 1)) & ~(uint64_t)(EL_ALIGN - 1);
}

#endif
