/* test_hashcache.c - artefact hashes: right digests, computed in a child only
 * on a miss, served from the cache file while (dev, inode, size, mtime) hold,
 * recomputed when the file changes, errors naming the file, cancel. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hashcache.h"
#include "tap.h"

struct res {
	int done, rc;
	char msg[600];
};

static void on_done(int rc, const char *msg, void *arg)
{
	struct res *r = arg;
	r->done++;
	r->rc = rc;
	lab_strlcpy(r->msg, msg ? msg : "", sizeof r->msg);
}

static void run(struct loop *l, struct res *r)
{
	for (int i = 0; i < 500 && !r->done; i++)
		loop_run_once(l, 20);
}

static void write_file(const char *path, const char *text, time_t mtime)
{
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	struct timespec ts[2] = {{mtime, 0}, {mtime, 0}};
	utimensat(AT_FDCWD, path, ts, 0);
}

int main(void)
{
	char dir[64];
	lab_strlcpy(dir, "/tmp/emmclab-test-hashcache-XXXXXX", sizeof dir);
	ok(mkdtemp(dir) != NULL, "temp dir");
	char a[128], b[128], cache[128];
	snprintf(a, sizeof a, "%s/kernel", dir);
	snprintf(b, sizeof b, "%s/initrd", dir);
	snprintf(cache, sizeof cache, "%s/state/artefact-hashes", dir);
	time_t old = time(NULL) - 3600;
	write_file(a, "abc", old);
	write_file(b, "another artefact", old);
	struct loop *l = loop_new();
	const char *paths[3] = {a, "", b};
	char out[3][65];
	struct res r = {0};
	unsigned long c0 = hashcache_children();
	struct hashcache_req *q = hashcache_start(l, cache, paths, 3, out, on_done, &r);
	ok(q != NULL && r.done == 0, "started; no callback inside hashcache_start");
	run(l, &r);
	is_int(r.done, 1, "one callback");
	is_int(r.rc, LAB_OK, "hashed");
	/* FIPS 180-2 test vector for "abc" */
	is_str(out[0], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256(abc)");
	is_str(out[1], "", "empty path: empty digest");
	char want[65];
	struct lab_err e = {0};
	lab_sha256_file(b, want, &e);
	is_str(out[2], want, "second file's digest");
	is_int(hashcache_children() - c0, 1, "a miss hashes in one child process");
	ok(access(cache, R_OK) == 0, "cache file written (its directory created)");

	/* all hits: no child, same digests */
	memset(out, 'x', sizeof out);
	memset(&r, 0, sizeof r);
	hashcache_start(l, cache, paths, 3, out, on_done, &r);
	ok(r.done == 0, "hit: still no callback inside the call");
	run(l, &r);
	ok(r.rc == LAB_OK && strcmp(out[0], "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == 0 &&
		   strcmp(out[2], want) == 0,
	   "hit: digests from the cache");
	is_int(hashcache_children() - c0, 1, "hit: no child process");
	struct stat st;
	stat(a, &st);
	char hex[65];
	ok(hashcache_lookup(cache, a, &st, hex), "lookup finds the entry");

	/* same size, other contents and mtime: a miss, the new digest */
	write_file(a, "abd", old + 10);
	memset(&r, 0, sizeof r);
	hashcache_start(l, cache, paths, 3, out, on_done, &r);
	run(l, &r);
	lab_sha256_file(a, want, &e);
	ok(r.rc == LAB_OK && strcmp(out[0], want) == 0, "changed file: new digest");
	is_int(hashcache_children() - c0, 2, "changed file: hashed again");
	stat(a, &st);
	ok(hashcache_lookup(cache, a, &st, hex) && strcmp(hex, want) == 0, "cache updated");
	ok(hashcache_lookup(cache, b, &(struct stat){0}, hex) == false, "a different key misses");

	/* a file modified just now is hashed but not cached (mtime granularity) */
	write_file(a, "fresh", time(NULL));
	memset(&r, 0, sizeof r);
	hashcache_start(l, cache, paths, 3, out, on_done, &r);
	run(l, &r);
	stat(a, &st);
	ok(r.rc == LAB_OK && !hashcache_lookup(cache, a, &st, hex), "racy mtime: not cached");

	/* a missing file: an error naming it, no child */
	unsigned long c1 = hashcache_children();
	const char *missing[1] = {"/nonexistent/emmclab-kernel"};
	memset(&r, 0, sizeof r);
	hashcache_start(l, cache, missing, 1, out, on_done, &r);
	run(l, &r);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "/nonexistent/emmclab-kernel"), "missing file named: %s", r.msg);
	is_int(hashcache_children() - c1, 0, "missing file: no child");

	/* cancel in flight: no callback */
	write_file(a, "cancel me", old + 20);
	memset(&r, 0, sizeof r);
	q = hashcache_start(l, cache, paths, 3, out, on_done, &r);
	hashcache_cancel(q);
	for (int i = 0; i < 20; i++)
		loop_run_once(l, 10);
	is_int(r.done, 0, "cancelled: no callback");
	ok(hashcache_start(l, cache, paths, HASHCACHE_MAX_FILES + 1, out, on_done, &r) == NULL,
	   "too many files refused");

	loop_free(l);
	char cmd[200];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", dir);
	return tap_done();
}
