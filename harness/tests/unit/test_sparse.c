/* test_sparse.c - sparse image reader/writer/splitter, against Debian's img2simg/simg2img. */
#include "sparse.h"
#include "tap.h"
#include "util.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[256];

static char *tmp(const char *name)
{
	static char buf[8][512];
	static int i;
	i = (i + 1) % 8;
	snprintf(buf[i], sizeof buf[i], "%s/%s", dir, name);
	return buf[i];
}

static int run(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static bool have(const char *prog)
{
	char cmd[256];
	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
	return run(cmd) == 0;
}

/* Compare a file with the reference raw image (zero-padded to `padded`). */
static bool same_as(const char *path, const uint8_t *ref, size_t len, size_t padded)
{
	char *got = NULL;
	size_t glen = 0;
	struct lab_err e = {0};
	if (lab_read_file(path, 64u << 20, &got, &glen, &e))
		return false;
	bool ok = glen == padded && memcmp(got, ref, len) == 0;
	for (size_t i = len; ok && i < glen; i++)
		ok = got[i] == 0;
	free(got);
	return ok;
}

static uint32_t rng = 12345;
static uint32_t rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 8;
}

int main(void)
{
	snprintf(dir, sizeof dir, "/tmp/emmclab-sparse-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	struct lab_err e = {0};
	const uint32_t bs = 4096;

	/* A raw image: random blocks, a real hole, a fill pattern, a partial last block. */
	size_t len = 3 * 1024 * 1024 + 1000;
	uint8_t *raw = calloc(1, len);
	for (size_t i = 0; i < 1024 * 1024; i++)
		raw[i] = (uint8_t)rnd();
	for (size_t i = 2 * 1024 * 1024; i < 2 * 1024 * 1024 + 65536; i += 4)
		memcpy(raw + i, "\xde\xad\xbe\xef", 4);
	for (size_t i = 3 * 1024 * 1024 - 8192; i < len; i++)
		raw[i] = (uint8_t)rnd();
	int fd = open(tmp("raw.img"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok(fd >= 0, "create raw image");
	/* write only the non-zero regions so the file has real holes */
	if (pwrite(fd, raw, 1024 * 1024, 0) != 1024 * 1024 ||
	    pwrite(fd, raw + 2 * 1024 * 1024, 65536, 2 * 1024 * 1024) != 65536 ||
	    pwrite(fd, raw + 3 * 1024 * 1024 - 8192, len - (3 * 1024 * 1024 - 8192),
		   3 * 1024 * 1024 - 8192) != (ssize_t)(len - (3 * 1024 * 1024 - 8192)))
		ok(0, "write raw image");
	close(fd);
	size_t padded = (len + bs - 1) / bs * bs;

	struct sparse_image img;
	int rc = sparse_open(tmp("raw.img"), bs, &img, &e);
	is_int(rc, LAB_OK, "open raw image");
	ok(!img.was_sparse, "raw image detected as raw");
	is_int(img.total_blks, padded / bs, "total blocks (last partial block rounded up)");
	bool has_fill = false;
	for (size_t i = 0; i < img.n; i++)
		has_fill |= img.c[i].type == SPARSE_FILL;
	ok(has_fill, "holes became FILL chunks (%zu chunks)", img.n);
	uint64_t ssz = sparse_layout(&img);
	ok(ssz < len, "sparse form is smaller than the raw image (%llu < %zu)", (unsigned long long)ssz, len);

	/* Random-access serialisation equals one sequential pass. */
	uint8_t *whole = malloc(ssz), *pieces = malloc(ssz);
	rc = sparse_serialize(&img, 0, whole, ssz, &e);
	is_int(rc, LAB_OK, "serialise whole");
	for (uint64_t off = 0; off < ssz;) {
		size_t n = 1 + rnd() % 7000;
		if (n > ssz - off)
			n = ssz - off;
		if (sparse_serialize(&img, off, pieces + off, n, &e))
			break;
		off += n;
	}
	ok(memcmp(whole, pieces, ssz) == 0, "serialise in random slices == whole");
	ok(sparse_serialize(&img, ssz - 10, pieces, 11, &e) != LAB_OK, "read past the end refused");
	free(pieces);

	/* Our writer, Debian's simg2img as the reader. */
	rc = sparse_write_file(&img, tmp("ours.simg"), &e);
	is_int(rc, LAB_OK, "write sparse file");
	bool ref = have("simg2img") && have("img2simg");
	if (ref) {
		char cmd[1200];
		snprintf(cmd, sizeof cmd, "simg2img %s %s >/dev/null 2>&1", tmp("ours.simg"), tmp("back.raw"));
		is_int(run(cmd), 0, "simg2img reads our sparse image");
		ok(same_as(tmp("back.raw"), raw, len, padded), "simg2img expands it to the raw image");
	} else {
		tap_skip("simg2img/img2simg not installed (android-sdk-libsparse-utils)");
	}

	/* Our reader on our own output, and on img2simg's output. */
	struct sparse_image back;
	rc = sparse_open(tmp("ours.simg"), bs, &back, &e);
	ok(rc == LAB_OK && back.was_sparse, "our sparse file parses (%s)", e.msg);
	unlink(tmp("exp.raw"));
	rc = sparse_expand_file(&back, tmp("exp.raw"), &e);
	ok(rc == LAB_OK && same_as(tmp("exp.raw"), raw, len, padded), "expand our file == raw image");
	sparse_free(&back);
	if (ref) {
		char cmd[1200];
		snprintf(cmd, sizeof cmd, "img2simg %s %s >/dev/null 2>&1", tmp("raw.img"), tmp("ref.simg"));
		is_int(run(cmd), 0, "img2simg");
		rc = sparse_open(tmp("ref.simg"), bs, &back, &e);
		ok(rc == LAB_OK, "img2simg output parses (%s)", e.msg);
		unlink(tmp("exp2.raw"));
		rc = sparse_expand_file(&back, tmp("exp2.raw"), &e);
		ok(rc == LAB_OK && same_as(tmp("exp2.raw"), raw, len, padded),
		   "expanding img2simg's image == raw image");
		sparse_free(&back);
	}

	/* Splitting at several sizes: every piece fits, covers all blocks, and the
	 * pieces flashed in order give the image (checked with simg2img and ours). */
	const uint64_t maxes[] = {64 * 1024, 100000, 300 * 1024 + 7, 1024 * 1024, 64u << 20};
	for (size_t m = 0; m < LAB_ARRAY_SIZE(maxes); m++) {
		struct sparse_image *pc = NULL;
		size_t np = 0;
		rc = sparse_split(&img, maxes[m], &pc, &np, &e);
		is_int(rc, LAB_OK, "split");
		bool fits = true, covers = true;
		char list[4096] = "";
		size_t off = 0;
		unlink(tmp("split.raw"));
		bool ours_ok = true;
		for (size_t i = 0; i < np; i++) {
			uint64_t sz = sparse_layout(&pc[i]);
			fits &= sz <= maxes[m];
			uint64_t blocks = 0;
			for (size_t k = 0; k < pc[i].n; k++)
				blocks += pc[i].c[k].blocks;
			covers &= blocks == img.total_blks;
			char name[64];
			snprintf(name, sizeof name, "piece%zu.simg", i);
			ours_ok &= sparse_write_file(&pc[i], tmp(name), &e) == LAB_OK;
			struct sparse_image rp;
			ours_ok &= sparse_open(tmp(name), bs, &rp, &e) == LAB_OK;
			ours_ok &= sparse_expand_file(&rp, tmp("split.raw"), &e) == LAB_OK;
			sparse_free(&rp);
			if (off < sizeof list)
				off += (size_t)snprintf(list + off, sizeof list - off, " %s", tmp(name));
		}
		ok(np >= (maxes[m] < ssz ? 2u : 1u), "max %llu: %zu pieces", (unsigned long long)maxes[m], np);
		ok(fits, "max %llu: every piece fits", (unsigned long long)maxes[m]);
		ok(covers, "max %llu: every piece covers the whole block range", (unsigned long long)maxes[m]);
		ok(ours_ok && same_as(tmp("split.raw"), raw, len, padded),
		   "max %llu: pieces re-read and applied in order == image (%s)", (unsigned long long)maxes[m], e.msg);
		if (ref) {
			char cmd[5000];
			snprintf(cmd, sizeof cmd, "rm -f %s; simg2img%s %s >/dev/null 2>&1", tmp("split2.raw"),
				 list, tmp("split2.raw"));
			is_int(run(cmd), 0, "simg2img accepts the pieces");
			ok(same_as(tmp("split2.raw"), raw, len, padded), "max %llu: simg2img of the pieces == image",
			   (unsigned long long)maxes[m]);
		}
		for (size_t i = 0; i < np; i++)
			sparse_free(&pc[i]);
		free(pc);
	}
	struct sparse_image *pc = NULL;
	size_t np = 0;
	ok(sparse_split(&img, 1000, &pc, &np, &e) == LAB_EUSAGE, "a piece smaller than a block is refused");

	/* Parser errors on damaged images. */
	struct sparse_image bad;
	uint8_t *cp = malloc(ssz);
	struct { size_t at; uint8_t v; const char *what; } dmg[] = {
		{0, 0x00, "bad magic"},
		{4, 2, "version"},
		{SPARSE_HDR_SZ + 0, 0x55, "unknown type"},
		{SPARSE_HDR_SZ + 8, 0x01, "total_sz"},
		{16, 0xff, "cover"},
	};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(dmg); i++) {
		memcpy(cp, whole, ssz);
		cp[dmg[i].at] = dmg[i].v;
		lab_err_clear(&e);
		rc = sparse_parse_mem(cp, ssz, &bad, &e);
		ok(rc == LAB_EPROTO, "damaged (%s) refused: %s", dmg[i].what, e.msg);
	}
	lab_err_clear(&e);
	ok(sparse_parse_mem(whole, ssz - 1, &bad, &e) == LAB_EPROTO && strstr(e.msg, "past the end"),
	   "truncated image refused: %s", e.msg);
	ok(sparse_parse_mem(whole, 10, &bad, &e) == LAB_EPROTO, "shorter than the header refused");
	ok(sparse_parse_mem(whole, ssz, &bad, &e) == LAB_OK && bad.n == img.n, "intact image parses");
	sparse_free(&bad);
	free(cp);
	free(whole);
	sparse_free(&img);
	free(raw);

	char cmd[600];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	run(cmd);
	return tap_done();
}
