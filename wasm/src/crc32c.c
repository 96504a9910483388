/* CRC32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8: about 8 bytes per step
 * with table lookups only, so native and WebAssembly builds share one portable code path.
 * Check value: crc32c("123456789") = 0xe3069283. */
#include "internal.h"

static uint32_t table[8][256];
static volatile int table_ready;

/* Tables are built on first use. Two threads racing here write identical values, and the
 * flag is set only after the tables are complete. */
static void init_table(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++) table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xFF];
  table_ready = 1;
}

uint32_t el_crc32c(uint32_t crc, const uint8_t *p, size_t n) {
  if (!table_ready) init_table();
  uint32_t c = ~crc;
  while (n && ((uintptr_t)p & 7)) {
    c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    n--;
  }
  while (n >= 8) {
    uint32_t lo = c ^ el_ld32(p), hi = el_ld32(p + 4);
    c = table[7][lo & 0xFF] ^ table[6][(lo >> 8) & 0xFF] ^ table[5][(lo >> 16) & 0xFF] ^
        table[4][lo >> 24] ^ table[3][hi & 0xFF] ^ table[2][(hi >> 8) & 0xFF] ^
        table[1][(hi >> 16) & 0xFF] ^ table[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = table[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}
