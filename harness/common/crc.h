/*
 * crc.h - CRC-32 (IEEE 802.3, reflected 0xEDB88320, as zlib's crc32()),
 * shared by the protocol lines, the agent's power-fail records and the
 * controller.  Plain libc: the static agent links it.
 */
#ifndef EMMCLAB_CRC_H
#define EMMCLAB_CRC_H

#include <stddef.h>
#include <stdint.h>

/* The CRC of data[0..len) ("123456789" gives 0xCBF43926). */
uint32_t crc32_ieee(const void *data, size_t len);

#endif
