/*
 * hex.h - hexadecimal digits, for the decoders of the protocol (%XX), the
 * agent (CID and EXT_CSD dumps) and the simulator (URL queries).  Plain libc.
 */
#ifndef EMMCLAB_HEX_H
#define EMMCLAB_HEX_H

#include <stddef.h>

/* The value of hex digit c (either case), -1 if c is not one. */
int hex_digit(int c);

/* n bytes as 2n lowercase hex digits and a NUL (out holds 2n + 1). */
void hex_encode(char *out, const unsigned char *in, size_t n);

#endif
