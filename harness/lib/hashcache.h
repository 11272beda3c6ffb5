/*
 * hashcache.h - SHA-256 of host artefacts (kernels, initramfs, DTBs), cached
 * by (st_dev, st_ino, st_size, st_mtim) in a small text file, and computed
 * off the loop on a miss.
 *
 * A hit costs a stat() and a read of the cache file (bounded, local, on the
 * loop thread like the other small state files).  A miss forks a child that
 * hashes and writes "INDEX HEX" lines to a pipe; the pipe is a loop fd, so
 * the loop keeps serving every other board while 10 MB are hashed.  A file
 * changed while it was hashed, or modified within the last HASHCACHE_RACY_S
 * seconds (an mtime tick could hide a later same-size write), is hashed but
 * not cached.  Writers of the cache replace it atomically; the last one wins.
 *
 * Ownership: the caller owns paths and out until the callback; the request
 * frees itself after its callback returns.  Loop thread only.
 */
#ifndef EMMCLAB_HASHCACHE_H
#define EMMCLAB_HASHCACHE_H

#include <stddef.h>
#include <sys/stat.h>
#include "loop.h"
#include "util.h"

#define HASHCACHE_MAX_FILES 8
#define HASHCACHE_ENTRIES 256 /* the cache keeps the most recent entries */
#define HASHCACHE_RACY_S 2

struct hashcache_req;
/* rc LAB_OK: out[i] holds the hex digest of paths[i] ("" for a NULL or "" path).
 * Otherwise msg names the file and what failed. */
typedef void (*hashcache_cb)(int rc, const char *msg, void *arg);

/* Hash paths[0..n) into out[0..n) (n <= HASHCACHE_MAX_FILES).  cb runs exactly
 * once, from the loop, never inside this call.  Returns NULL only when n is
 * too large (caller bug).  cache_file may be NULL: nothing is cached. */
struct hashcache_req *hashcache_start(struct loop *l, const char *cache_file,
				      const char *const *paths, size_t n, char (*out)[65],
				      hashcache_cb cb, void *arg);
/* Abandon a request: no callback follows, the child (if any) is killed. */
void hashcache_cancel(struct hashcache_req *r);

/* The cached digest of path whose stat is st, if the cache holds one. */
bool hashcache_lookup(const char *cache_file, const char *path, const struct stat *st,
		      char out[65]);
/* Number of child processes started since the program began (tests, benchmarks). */
unsigned long hashcache_children(void);

#endif
