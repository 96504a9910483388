/* The two CRCs of the container (wasm/FORMAT.md), by table lookup only, so native and
 * WebAssembly builds share one portable code path:
 *   CRC32C (Castagnoli, reflected 0x82F63B78): small structures (headers, tables, index,
 *     footer). Check value crc32c("123456789") = 0xe3069283.
 *   CRC-32/ISO-HDLC (zlib's crc32, reflected 0xEDB88320): content (pickle streams and
 *     out-of-band buffers), so Python can compute it with zlib.crc32 over its own memory.
 *     Check value crc32("123456789") = 0xcbf43926.
 * Both use "slicing": table t[k][b] is the CRC of byte b followed by k zero bytes, so one
 * step folds 8 (or 16) input bytes with independent lookups; CRC-32 also has "braiding"
 * (below). Which is fastest was measured (benchmarks/checksum.mjs, figures in the README):
 * el_crc32 uses the winner, braiding, natively and in WebAssembly. */
#include "internal.h"

typedef uint32_t crc_tables[16][256];

static crc_tables t_crc32c, t_crc32;
static volatile int ready_crc32c, ready_crc32;

/* Tables are built on first use. Two threads racing here write identical values, and the
 * flag is set only after the tables are complete. */
static void build(crc_tables t, uint32_t poly) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int k = 1; k < 16; k++) t[k][i] = (t[k - 1][i] >> 8) ^ t[0][t[k - 1][i] & 0xFF];
}

static const crc_tables *tables_crc32c(void) {
  if (!ready_crc32c) {
    build(t_crc32c, 0x82F63B78u);
    ready_crc32c = 1;
  }
  return (const crc_tables *)&t_crc32c;
}

static const crc_tables *tables_crc32(void) {
  if (!ready_crc32) {
    build(t_crc32, 0xEDB88320u);
    ready_crc32 = 1;
  }
  return (const crc_tables *)&t_crc32;
}

static uint32_t bytewise(const uint32_t *t0, uint32_t c, const uint8_t *p, size_t n) {
  while (n--) c = t0[(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c;
}

/* c is the running (inverted) register; n is a multiple of 8. */
static uint32_t slice8(const crc_tables *tp, uint32_t c, const uint8_t *p, size_t n) {
  const uint32_t(*t)[256] = *tp;
  for (; n >= 8; p += 8, n -= 8) {
    uint32_t lo = c ^ el_ld32(p), hi = el_ld32(p + 4);
    c = t[7][lo & 0xFF] ^ t[6][(lo >> 8) & 0xFF] ^ t[5][(lo >> 16) & 0xFF] ^ t[4][lo >> 24] ^
        t[3][hi & 0xFF] ^ t[2][(hi >> 8) & 0xFF] ^ t[1][(hi >> 16) & 0xFF] ^ t[0][hi >> 24];
  }
  return c;
}

static uint32_t slice16(const crc_tables *tp, uint32_t c, const uint8_t *p, size_t n) {
  const uint32_t(*t)[256] = *tp;
  for (; n >= 16; p += 16, n -= 16) {
    uint32_t a = c ^ el_ld32(p), b = el_ld32(p + 4), d = el_ld32(p + 8), e = el_ld32(p + 12);
    c = t[15][a & 0xFF] ^ t[14][(a >> 8) & 0xFF] ^ t[13][(a >> 16) & 0xFF] ^ t[12][a >> 24] ^
        t[11][b & 0xFF] ^ t[10][(b >> 8) & 0xFF] ^ t[9][(b >> 16) & 0xFF] ^ t[8][b >> 24] ^
        t[7][d & 0xFF] ^ t[6][(d >> 8) & 0xFF] ^ t[5][(d >> 16) & 0xFF] ^ t[4][d >> 24] ^
        t[3][e & 0xFF] ^ t[2][(e >> 8) & 0xFF] ^ t[1][(e >> 16) & 0xFF] ^ t[0][e >> 24];
  }
  return c;
}

/* ---- braiding: BRAIDS independent CRC registers over interleaved 8-byte words ----------
 * Slicing folds 16 bytes per step but each step waits for the previous one (a dependency
 * chain through one register). Braiding splits the input into words of 8 bytes dealt round
 * robin to BRAIDS registers: register i sees only its own words, with the other registers'
 * words taken as zeros, so the BRAIDS chains run in parallel. Table b[k][x] is the register
 * after byte x at position k of a word followed by the rest of the word and the
 * (BRAIDS-1)*8 zero bytes up to the register's next word. CRCs are linear over XOR, so the
 * registers add up; the last block is processed word by word in order, folding register i
 * in where its next word begins. */
#define BRAIDS 5
#define BLOCK (BRAIDS * 8)

typedef uint32_t braid_tables[8][256];
static braid_tables b_crc32;
static volatile int ready_braid;

static const braid_tables *tables_braid(void) {
  if (!ready_braid) {
    const crc_tables *t = tables_crc32();
    for (uint32_t x = 0; x < 256; x++)
      for (int k = 0; k < 8; k++) {
        uint32_t c = (*t)[0][x];
        for (int z = 0; z < (7 - k) + (BRAIDS - 1) * 8; z++) c = (*t)[0][c & 0xFF] ^ (c >> 8);
        b_crc32[k][x] = c;
      }
    ready_braid = 1;
  }
  return (const braid_tables *)&b_crc32;
}

static uint32_t braid_word(const braid_tables *tp, uint64_t w) {
  const uint32_t(*b)[256] = *tp;
  return b[0][w & 0xFF] ^ b[1][(w >> 8) & 0xFF] ^ b[2][(w >> 16) & 0xFF] ^
         b[3][(w >> 24) & 0xFF] ^ b[4][(w >> 32) & 0xFF] ^ b[5][(w >> 40) & 0xFF] ^
         b[6][(w >> 48) & 0xFF] ^ b[7][w >> 56];
}

/* n is a multiple of BLOCK and at least 2 blocks. */
static uint32_t braid(const crc_tables *t, uint32_t c, const uint8_t *p, size_t n) {
  const braid_tables *bt = tables_braid();
  uint32_t r0 = c, r1 = 0, r2 = 0, r3 = 0, r4 = 0;
  for (; n > BLOCK; p += BLOCK, n -= BLOCK) {
    uint64_t w0 = el_ld64(p) ^ r0, w1 = el_ld64(p + 8) ^ r1, w2 = el_ld64(p + 16) ^ r2,
             w3 = el_ld64(p + 24) ^ r3, w4 = el_ld64(p + 32) ^ r4;
    r0 = braid_word(bt, w0);
    r1 = braid_word(bt, w1);
    r2 = braid_word(bt, w2);
    r3 = braid_word(bt, w3);
    r4 = braid_word(bt, w4);
  }
  c = slice8(t, r0, p, 8);
  c = slice8(t, c ^ r1, p + 8, 8);
  c = slice8(t, c ^ r2, p + 16, 8);
  c = slice8(t, c ^ r3, p + 24, 8);
  return slice8(t, c ^ r4, p + 32, 8);
}

/* One CRC with the given method (1 bytewise, 8 or 16 slicing, 5 braiding): align, run,
 * then the tail byte by byte. */
static uint32_t crc_run(const crc_tables *t, int width, uint32_t crc, const uint8_t *p, size_t n) {
  uint32_t c = ~crc;
  if (!p) return crc;
  size_t head = (size_t)(-(uintptr_t)p & 7);
  if (head > n) head = n;
  c = bytewise((*t)[0], c, p, head);
  p += head;
  n -= head;
  size_t body = 0;
  if (width == BRAIDS && t == tables_crc32() && n >= 2 * BLOCK) {
    body = n - n % BLOCK;
    c = braid(t, c, p, body);
  } else if (width == 16 || width == BRAIDS) {
    body = n & ~(size_t)15;
    c = slice16(t, c, p, body);
  } else if (width == 8) {
    body = n & ~(size_t)7;
    c = slice8(t, c, p, body);
  }
  c = bytewise((*t)[0], c, p + body, n - body);
  return ~c;
}

uint32_t el_crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  return crc_run(tables_crc32c(), 8, crc, p, n);
}

uint32_t el_crc32(uint32_t crc, const uint8_t *p, size_t n) {
  return crc_run(tables_crc32(), EL_CRC32_WIDTH, crc, p, n);
}

uint32_t el_crc32_width(int width, uint32_t crc, const uint8_t *p, size_t n) {
  return crc_run(tables_crc32(), width, crc, p, n);
}

uint32_t el_crc32c_width(int width, uint32_t crc, const uint8_t *p, size_t n) {
  return crc_run(tables_crc32c(), width, crc, p, n);
}
