/*
 * crc.c - CRC-32 (crc.h).
 */
#include "crc.h"

/* Half-byte table: small, constant, no init, fast enough for 4 KiB lines
 * and power-fail records. */
static const uint32_t crc_nibble[16] = {
	0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac, 0x76dc4190, 0x6b6b51f4,
	0x4db26158, 0x5005713c, 0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
	0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c,
};

uint32_t crc32_ieee(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint32_t crc = 0xffffffffu;

	while (len--) {
		crc ^= *p++;
		crc = (crc >> 4) ^ crc_nibble[crc & 0xf];
		crc = (crc >> 4) ^ crc_nibble[crc & 0xf];
	}
	return crc ^ 0xffffffffu;
}
