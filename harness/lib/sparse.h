/*
 * sparse.h - Android sparse images: read, write, split for fastboot.
 *
 * Format (little-endian): a 28-byte file header (magic 0xED26FF3A, version
 * 1.0, header sizes 28/12, blk_sz, total_blks, total_chunks, checksum) and
 * chunks with a 12-byte header (type, reserved, chunk_sz in blocks, total_sz
 * in bytes): RAW (data follows), FILL (4-byte pattern), DONT_CARE (nothing:
 * the target keeps what it had), CRC32 (4 bytes, ignored).
 *
 * An image is a chunk list over a source: a sparse file (RAW chunks point
 * into it), a raw file (data extents become RAW chunks and holes, found with
 * SEEK_HOLE without reading, become FILL 0), or a buffer.  Images are never
 * loaded whole: bytes of the serialised form are produced on demand
 * (sparse_serialize) so a multi-gigabyte image streams in bounded buffers.
 *
 * Splitting (fastboot max-download-size): sparse_split() cuts an image into
 * pieces whose serialised size is at most max bytes; each piece is a valid
 * sparse image covering the whole block range, with DONT_CARE chunks for
 * the blocks other pieces write, so flashing the pieces in order yields the
 * image.  CRC32 chunks are dropped (they cannot survive a split).
 *
 * Why not Debian's libsparse (android-libsparse-dev 29.0.6, checked for issue 12): it
 * does split (sparse_file_resparse), but it does not fit the event loop.
 *  - Output is pushed, not pulled: sparse_file_callback()/foreach_chunk() write a whole
 *    piece in one call, while fastboot.c asks for the next 1 MiB at an offset
 *    (sparse_serialize) from each USB completion.  Using it would mean holding a
 *    whole piece (max-download-size, often 256 MiB or more) in memory, or a thread
 *    or child process feeding a pipe.
 *  - Reading a raw image is one blocking call that read()s every 4 KiB block, holes
 *    included: 262,153 reads and 0.5 s (warm cache) for a 1 GiB image holding 12 MiB;
 *    sparse_open() finds the holes with SEEK_HOLE and reads nothing.
 *  - sparse_file_import_auto() on a corrupt sparse image prints to stderr and then
 *    returns the file imported as a RAW image (it would be flashed as raw bytes);
 *    sparse_file_import_buf() takes no length, so it cannot parse untrusted memory
 *    (the fuzz target) safely.
 *  - It has no pkg-config file and lives in a private directory.
 * This codec streams on demand, rejects what it cannot parse, and is fuzzed as our
 * own parser; Debian's img2simg/simg2img are the reference in test_sparse.
 *
 * Not thread-safe; no I/O besides pread on the source fd.
 */
#ifndef EMMCLAB_SPARSE_H
#define EMMCLAB_SPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"

#define SPARSE_MAGIC 0xED26FF3Au
#define SPARSE_HDR_SZ 28
#define SPARSE_CHUNK_HDR_SZ 12
#define SPARSE_RAW 0xCAC1
#define SPARSE_FILL 0xCAC2
#define SPARSE_DONT_CARE 0xCAC3
#define SPARSE_CRC32 0xCAC4
#define SPARSE_MAX_CHUNKS (1u << 22)

struct sparse_chunk {
	uint16_t type;
	uint32_t blocks;
	uint64_t src;  /* RAW: byte offset of the data in the source */
	uint32_t fill; /* FILL: the 32-bit pattern */
};

struct sparse_image {
	uint32_t blk_sz;
	uint32_t total_blks;
	struct sparse_chunk *c;
	size_t n, cap;
	/* source of RAW data: fd (pread) or buffer */
	int fd;
	bool own_fd;
	const uint8_t *mem;
	uint64_t src_size;  /* bytes in the source; reads past it give zeros */
	bool was_sparse;    /* the source file was a sparse image */
	/* serialised layout: byte offset of each chunk (filled by sparse_layout) */
	uint64_t *off;
	uint64_t size;
};

/* Parse a sparse image held in memory (borrowed: must outlive img). */
int sparse_parse_mem(const void *buf, size_t len, struct sparse_image *img, struct lab_err *e);
/* Open a file: a sparse image is parsed; anything else is a raw image cut
 * into blk_sz blocks (typically 4096).  fd kept open until sparse_free. */
int sparse_open(const char *path, uint32_t blk_sz, struct sparse_image *img, struct lab_err *e);
void sparse_free(struct sparse_image *img);

/* Bytes the image expands to on the target (total_blks * blk_sz). */
uint64_t sparse_expanded_size(const struct sparse_image *img);
/* Compute the serialised layout and size (idempotent). */
uint64_t sparse_layout(struct sparse_image *img);
/* Copy len bytes of the serialised image starting at off into buf. */
int sparse_serialize(struct sparse_image *img, uint64_t off, void *buf, size_t len,
		     struct lab_err *e);
/* Write the serialised image to a file / the expanded (raw) image to a file. */
int sparse_write_file(struct sparse_image *img, const char *path, struct lab_err *e);
int sparse_expand_file(const struct sparse_image *img, const char *path, struct lab_err *e);

/* Split into pieces of at most max serialised bytes (see above).  Pieces
 * borrow img's source: free them (sparse_free + free(array)) before img. */
int sparse_split(const struct sparse_image *img, uint64_t max, struct sparse_image **pieces,
		 size_t *npieces, struct lab_err *e);

#endif
