/*
 * hex.h - hexadecimal digits, for the decoders of the protocol (%XX), the
 * agent (CID and EXT_CSD dumps) and the simulator (URL queries).  Plain libc.
 */
#ifndef EMMCLAB_HEX_H
#define EMMCLAB_HEX_H

/* The value of hex digit c (either case), -1 if c is not one. */
int hex_digit(int c);

#endif
