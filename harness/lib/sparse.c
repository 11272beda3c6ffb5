/* sparse.c - Android sparse image reader, writer and splitter (see sparse.h). */
#include "sparse.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* RAW chunks made from raw files are capped so total_sz fits in 32 bits
 * with room to spare, and so a chunk is a reasonable unit to stream. */
#define RAW_CHUNK_MAX (64u * 1024 * 1024)

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void img_init(struct sparse_image *img)
{
	memset(img, 0, sizeof *img);
	img->fd = -1;
}

static void add_chunk(struct sparse_image *img, uint16_t type, uint32_t blocks, uint64_t src,
		      uint32_t fill)
{
	if (img->n == img->cap) {
		img->cap = img->cap ? img->cap * 2 : 16;
		img->c = xreallocarray(img->c, img->cap, sizeof *img->c);
	}
	img->c[img->n++] = (struct sparse_chunk){.type = type, .blocks = blocks, .src = src, .fill = fill};
	free(img->off);
	img->off = NULL;
}

/* Reads through either source kind; the reader callback gives bytes at an offset. */
typedef int (*rd_fn)(void *ctx, uint64_t off, void *buf, size_t len);

static int parse(rd_fn rd, void *ctx, uint64_t len, struct sparse_image *img, struct lab_err *e)
{
	uint8_t h[SPARSE_HDR_SZ];
	if (len < SPARSE_HDR_SZ || rd(ctx, 0, h, sizeof h))
		return LAB_ERR(e, LAB_EPROTO, "sparse image: shorter than its header");
	if (le32(h) != SPARSE_MAGIC)
		return LAB_ERR(e, LAB_EPROTO, "sparse image: bad magic 0x%08x", le32(h));
	uint16_t major = le16(h + 4), fhs = le16(h + 8), chs = le16(h + 10);
	uint32_t blk_sz = le32(h + 12), total_blks = le32(h + 16), total_chunks = le32(h + 20);
	if (major != 1)
		return LAB_ERR(e, LAB_EPROTO, "sparse image: version %u not supported", major);
	if (fhs < SPARSE_HDR_SZ || chs < SPARSE_CHUNK_HDR_SZ)
		return LAB_ERR(e, LAB_EPROTO, "sparse image: header sizes %u/%u too small", fhs, chs);
	if (blk_sz == 0 || blk_sz % 4 || blk_sz > (1u << 24))
		return LAB_ERR(e, LAB_EPROTO, "sparse image: bad block size %u", blk_sz);
	if (total_chunks > SPARSE_MAX_CHUNKS)
		return LAB_ERR(e, LAB_EPROTO, "sparse image: %u chunks is too many", total_chunks);
	img->blk_sz = blk_sz;
	img->total_blks = total_blks;
	uint64_t pos = fhs, blocks = 0;
	for (uint32_t i = 0; i < total_chunks; i++) {
		uint8_t c[SPARSE_CHUNK_HDR_SZ];
		if (pos + chs > len || rd(ctx, pos, c, sizeof c))
			return LAB_ERR(e, LAB_EPROTO, "sparse image: chunk %u header past the end", i);
		uint16_t type = le16(c);
		uint32_t csz = le32(c + 4), tsz = le32(c + 8);
		uint64_t data = pos + chs;
		uint64_t want;
		switch (type) {
		case SPARSE_RAW: want = (uint64_t)csz * blk_sz; break;
		case SPARSE_FILL: want = 4; break;
		case SPARSE_DONT_CARE: want = 0; break;
		case SPARSE_CRC32: want = 4; break;
		default:
			return LAB_ERR(e, LAB_EPROTO, "sparse image: chunk %u has unknown type 0x%04x", i,
				       type);
		}
		if ((uint64_t)tsz != chs + want)
			return LAB_ERR(e, LAB_EPROTO,
				       "sparse image: chunk %u (type 0x%04x, %u blocks) total_sz %u, expected %llu",
				       i, type, csz, tsz, (unsigned long long)(chs + want));
		if (data + want > len)
			return LAB_ERR(e, LAB_EPROTO, "sparse image: chunk %u data past the end", i);
		if (type != SPARSE_CRC32) {
			if (blocks + csz > total_blks)
				return LAB_ERR(e, LAB_EPROTO,
					       "sparse image: chunks cover more than %u blocks", total_blks);
			blocks += csz;
			uint32_t fill = 0;
			if (type == SPARSE_FILL) {
				uint8_t f[4];
				if (rd(ctx, data, f, 4))
					return LAB_ERR(e, LAB_EPROTO, "sparse image: unreadable fill");
				fill = le32(f);
			}
			if (csz)
				add_chunk(img, type, csz, data, fill);
		}
		pos = data + want;
	}
	if (blocks != total_blks)
		return LAB_ERR(e, LAB_EPROTO, "sparse image: chunks cover %llu of %u blocks",
			       (unsigned long long)blocks, total_blks);
	img->was_sparse = true;
	return LAB_OK;
}

struct memsrc {
	const uint8_t *p;
	size_t len;
};

static int mem_rd(void *ctx, uint64_t off, void *buf, size_t len)
{
	struct memsrc *m = ctx;
	if (off > m->len || len > m->len - off)
		return -1;
	memcpy(buf, m->p + off, len);
	return 0;
}

static int fd_rd(void *ctx, uint64_t off, void *buf, size_t len)
{
	int fd = *(int *)ctx;
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		done += (size_t)r;
	}
	return 0;
}

int sparse_parse_mem(const void *buf, size_t len, struct sparse_image *img, struct lab_err *e)
{
	img_init(img);
	struct memsrc m = {buf, len};
	int rc = parse(mem_rd, &m, len, img, e);
	if (rc) {
		sparse_free(img);
		return rc;
	}
	img->mem = buf;
	img->src_size = len;
	return LAB_OK;
}

/* A raw file: data extents as RAW chunks, holes as FILL 0 (no reads). */
static int open_raw(struct sparse_image *img, uint64_t size, struct lab_err *e)
{
	uint32_t bs = img->blk_sz;
	uint64_t nblk = (size + bs - 1) / bs;
	if (nblk > UINT32_MAX)
		return LAB_ERR(e, LAB_EUSAGE, "image: %llu bytes is too large for a sparse image",
			       (unsigned long long)size);
	img->total_blks = (uint32_t)nblk;
	uint64_t blk = 0;
	while (blk < nblk) {
		off_t pos = (off_t)(blk * bs);
		off_t data = lseek(img->fd, pos, SEEK_DATA);
		uint64_t dblk;
		if (data < 0)
			dblk = nblk; /* ENXIO: only a hole remains */
		else
			dblk = (uint64_t)data / bs; /* round down: a partial block is data */
		if (dblk > nblk)
			dblk = nblk;
		if (dblk > blk) {
			uint64_t n = dblk - blk;
			add_chunk(img, SPARSE_FILL, (uint32_t)n, 0, 0);
			blk = dblk;
			continue;
		}
		off_t hole = lseek(img->fd, pos, SEEK_HOLE);
		uint64_t hblk = hole < 0 ? nblk : ((uint64_t)hole + bs - 1) / bs;
		if (hblk > nblk)
			hblk = nblk;
		if (hblk <= blk)
			hblk = blk + 1;
		while (blk < hblk) {
			uint64_t n = hblk - blk;
			if (n > RAW_CHUNK_MAX / bs)
				n = RAW_CHUNK_MAX / bs;
			add_chunk(img, SPARSE_RAW, (uint32_t)n, blk * bs, 0);
			blk += n;
		}
	}
	return LAB_OK;
}

int sparse_open(const char *path, uint32_t blk_sz, struct sparse_image *img, struct lab_err *e)
{
	img_init(img);
	if (blk_sz == 0 || blk_sz % 4)
		return LAB_ERR(e, LAB_EUSAGE, "sparse: bad block size %u", blk_sz);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return LAB_ERR(e, LAB_EUSAGE, "%s: not a regular file", path);
	}
	img->fd = fd;
	img->own_fd = true;
	img->src_size = (uint64_t)st.st_size;
	uint8_t magic[4];
	int rc;
	if (st.st_size >= SPARSE_HDR_SZ && fd_rd(&fd, 0, magic, 4) == 0 && le32(magic) == SPARSE_MAGIC) {
		rc = parse(fd_rd, &img->fd, (uint64_t)st.st_size, img, e);
		if (rc && e) {
			lab_strlcat(e->msg, " in ", sizeof e->msg);
			lab_strlcat(e->msg, path, sizeof e->msg);
		}
	} else {
		img->blk_sz = blk_sz;
		rc = open_raw(img, (uint64_t)st.st_size, e);
	}
	if (rc)
		sparse_free(img);
	return rc;
}

void sparse_free(struct sparse_image *img)
{
	if (img->own_fd && img->fd >= 0)
		close(img->fd);
	free(img->c);
	free(img->off);
	img_init(img);
}

uint64_t sparse_expanded_size(const struct sparse_image *img)
{
	return (uint64_t)img->total_blks * img->blk_sz;
}

static uint64_t chunk_payload(const struct sparse_image *img, const struct sparse_chunk *c)
{
	switch (c->type) {
	case SPARSE_RAW: return (uint64_t)c->blocks * img->blk_sz;
	case SPARSE_FILL: return 4;
	default: return 0;
	}
}

uint64_t sparse_layout(struct sparse_image *img)
{
	if (img->off)
		return img->size;
	img->off = xcalloc(img->n + 1, sizeof *img->off);
	uint64_t pos = SPARSE_HDR_SZ;
	for (size_t i = 0; i < img->n; i++) {
		img->off[i] = pos;
		pos += SPARSE_CHUNK_HDR_SZ + chunk_payload(img, &img->c[i]);
	}
	img->off[img->n] = pos;
	img->size = pos;
	return pos;
}

/* Source bytes; zeros past the end (a raw image's last partial block). */
static int src_read(const struct sparse_image *img, uint64_t off, uint8_t *buf, size_t len)
{
	memset(buf, 0, len);
	if (off >= img->src_size)
		return 0;
	size_t n = len;
	if (n > img->src_size - off)
		n = (size_t)(img->src_size - off);
	if (img->mem) {
		memcpy(buf, img->mem + off, n);
		return 0;
	}
	int fd = img->fd;
	return fd_rd(&fd, off, buf, n);
}

int sparse_serialize(struct sparse_image *img, uint64_t off, void *out, size_t len,
		     struct lab_err *e)
{
	uint64_t size = sparse_layout(img);
	uint8_t *buf = out;
	if (off > size || len > size - off)
		return LAB_ERR(e, LAB_EUSAGE, "sparse: read of %zu bytes at %llu past the end (%llu)",
			       len, (unsigned long long)off, (unsigned long long)size);
	while (len) {
		if (off < SPARSE_HDR_SZ) {
			uint8_t h[SPARSE_HDR_SZ] = {0};
			put32(h, SPARSE_MAGIC);
			put16(h + 4, 1);
			put16(h + 6, 0);
			put16(h + 8, SPARSE_HDR_SZ);
			put16(h + 10, SPARSE_CHUNK_HDR_SZ);
			put32(h + 12, img->blk_sz);
			put32(h + 16, img->total_blks);
			put32(h + 20, (uint32_t)img->n);
			put32(h + 24, 0);
			size_t n = SPARSE_HDR_SZ - (size_t)off;
			if (n > len)
				n = len;
			memcpy(buf, h + off, n);
			buf += n, off += n, len -= n;
			continue;
		}
		/* the chunk holding off: binary search over the layout */
		size_t lo = 0, hi = img->n;
		while (hi - lo > 1) {
			size_t mid = (lo + hi) / 2;
			if (img->off[mid] <= off)
				lo = mid;
			else
				hi = mid;
		}
		const struct sparse_chunk *c = &img->c[lo];
		uint64_t in = off - img->off[lo];
		if (in < SPARSE_CHUNK_HDR_SZ) {
			uint8_t h[SPARSE_CHUNK_HDR_SZ];
			put16(h, c->type);
			put16(h + 2, 0);
			put32(h + 4, c->blocks);
			put32(h + 8, (uint32_t)(SPARSE_CHUNK_HDR_SZ + chunk_payload(img, c)));
			size_t n = SPARSE_CHUNK_HDR_SZ - (size_t)in;
			if (n > len)
				n = len;
			memcpy(buf, h + in, n);
			buf += n, off += n, len -= n;
			continue;
		}
		in -= SPARSE_CHUNK_HDR_SZ;
		uint64_t avail = chunk_payload(img, c) - in;
		size_t n = avail < len ? (size_t)avail : len;
		if (c->type == SPARSE_FILL) {
			uint8_t f[4];
			put32(f, c->fill);
			memcpy(buf, f + in, n);
		} else if (src_read(img, c->src + in, buf, n)) {
			return LAB_ERR(e, LAB_EINFRA, "sparse: reading the image source failed: %s",
				       strerror(errno));
		}
		buf += n, off += n, len -= n;
	}
	return LAB_OK;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int sparse_write_file(struct sparse_image *img, const char *path, struct lab_err *e)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	uint64_t size = sparse_layout(img), off = 0;
	size_t cap = 1 << 20;
	uint8_t *buf = xmalloc(cap);
	int rc = LAB_OK;
	while (off < size && !rc) {
		size_t n = size - off < cap ? (size_t)(size - off) : cap;
		rc = sparse_serialize(img, off, buf, n, e);
		if (!rc && write_all(fd, buf, n))
			rc = LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
		off += n;
	}
	free(buf);
	if (close(fd) && !rc)
		rc = LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	return rc;
}

int sparse_expand_file(const struct sparse_image *img, const char *path, struct lab_err *e)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	size_t cap = 1 << 20;
	uint8_t *buf = xmalloc(cap);
	uint64_t blk = 0;
	int rc = LAB_OK;
	for (size_t i = 0; i < img->n && !rc; i++) {
		const struct sparse_chunk *c = &img->c[i];
		uint64_t bytes = (uint64_t)c->blocks * img->blk_sz, done = 0;
		while (c->type != SPARSE_DONT_CARE && done < bytes && !rc) {
			size_t n = bytes - done < cap ? (size_t)(bytes - done) : cap;
			if (c->type == SPARSE_RAW) {
				if (src_read(img, c->src + done, buf, n))
					rc = LAB_ERR(e, LAB_EINFRA, "sparse: source read failed");
			} else {
				for (size_t k = 0; k + 4 <= n; k += 4)
					put32(buf + k, c->fill);
			}
			if (!rc && pwrite(fd, buf, n, (off_t)(blk * img->blk_sz + done)) != (ssize_t)n)
				rc = LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
			done += n;
		}
		blk += c->blocks;
	}
	if (!rc && ftruncate(fd, (off_t)sparse_expanded_size(img)) < 0)
		rc = LAB_ERR(e, LAB_EINFRA, "%s: %s", path, strerror(errno));
	free(buf);
	close(fd);
	return rc;
}

/* ---- splitting ------------------------------------------------------------ */

struct splitter {
	const struct sparse_image *img;
	uint64_t max;
	struct sparse_image *pieces;
	size_t n, cap;
	struct sparse_image *cur;
	uint64_t used;   /* serialised bytes of cur so far */
	uint64_t pend;   /* blocks cur covers so far */
	bool has_data;
};

static void piece_new(struct splitter *s)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 4;
		s->pieces = xreallocarray(s->pieces, s->cap, sizeof *s->pieces);
	}
	s->cur = &s->pieces[s->n++];
	img_init(s->cur);
	s->cur->blk_sz = s->img->blk_sz;
	s->cur->total_blks = s->img->total_blks;
	s->cur->fd = s->img->fd;
	s->cur->own_fd = false;
	s->cur->mem = s->img->mem;
	s->cur->src_size = s->img->src_size;
	s->cur->was_sparse = true;
	s->used = SPARSE_HDR_SZ;
	s->pend = 0;
	s->has_data = false;
}

static void piece_finish(struct splitter *s)
{
	if (s->pend < s->cur->total_blks)
		add_chunk(s->cur, SPARSE_DONT_CARE, (uint32_t)(s->cur->total_blks - s->pend), 0, 0);
	s->pend = s->cur->total_blks;
}

int sparse_split(const struct sparse_image *img, uint64_t max, struct sparse_image **pieces,
		 size_t *npieces, struct lab_err *e)
{
	const uint64_t hdr = SPARSE_CHUNK_HDR_SZ;
	if (max < SPARSE_HDR_SZ + 4 * hdr + img->blk_sz)
		return LAB_ERR(e, LAB_EUSAGE, "sparse: pieces of %llu bytes cannot hold one %u-byte block",
			       (unsigned long long)max, img->blk_sz);
	struct splitter s = {.img = img, .max = max};
	piece_new(&s);
	uint64_t pos = 0;
	for (size_t i = 0; i < img->n; i++) {
		const struct sparse_chunk *c = &img->c[i];
		if (c->type == SPARSE_DONT_CARE) {
			pos += c->blocks;
			continue;
		}
		uint64_t left = c->blocks, src = c->src;
		while (left) {
			uint64_t gap = pos > s.pend ? hdr : 0;
			/* reserve a trailing DONT_CARE so the piece can always be closed */
			uint64_t room = max - s.used;
			uint64_t take;
			if (c->type == SPARSE_FILL) {
				take = room >= gap + hdr + 4 + hdr ? left : 0;
			} else {
				uint64_t bytes = room > gap + hdr + hdr ? room - gap - hdr - hdr : 0;
				take = bytes / img->blk_sz;
				if (take > left)
					take = left;
			}
			if (take == 0) {
				if (!s.has_data) /* cannot happen: max was checked above */
					return LAB_ERR(e, LAB_EUSAGE, "sparse: piece size too small");
				piece_finish(&s);
				piece_new(&s);
				continue;
			}
			if (gap) {
				add_chunk(s.cur, SPARSE_DONT_CARE, (uint32_t)(pos - s.pend), 0, 0);
				s.used += hdr;
			}
			add_chunk(s.cur, c->type, (uint32_t)take, src, c->fill);
			s.used += hdr + (c->type == SPARSE_FILL ? 4 : take * img->blk_sz);
			s.has_data = true;
			pos += take;
			s.pend = pos;
			left -= take;
			if (c->type == SPARSE_RAW)
				src += take * img->blk_sz;
		}
	}
	piece_finish(&s);
	*pieces = s.pieces;
	*npieces = s.n;
	return LAB_OK;
}
