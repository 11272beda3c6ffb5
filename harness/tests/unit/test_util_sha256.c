/* Unit tests of lab_sha256 and lab_sha256_file (libcrypto behind the util API): the
 * FIPS 180-4 / NIST vectors, a multi-block input, and a file read in several chunks. */
#include "tap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void test_vectors(void)
{
	char hex[65];
	lab_sha256("", 0, hex);
	is_str(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "empty");
	lab_sha256("abc", 3, hex);
	is_str(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "abc");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	lab_sha256(two, strlen(two), hex);
	is_str(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
	       "448 bits (two blocks)");
}

static void test_file(void)
{
	/* One million 'a' (NIST): longer than one 64 KiB read, so the digest streams. */
	size_t n = 1000000;
	char *a = xmalloc(n);
	memset(a, 'a', n);
	char hex[65], fhex[65];
	lab_sha256(a, n, hex);
	is_str(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
	       "million a");
	char path[] = "/tmp/test_util_sha256.XXXXXX";
	int fd = mkstemp(path);
	ok(fd >= 0 && write(fd, a, n) == (ssize_t)n, "temp file written");
	close(fd);
	struct lab_err e = {0};
	ok(lab_sha256_file(path, fhex, &e) == LAB_OK, "file hashed");
	is_str(fhex, hex, "file digest = buffer digest");
	unlink(path);
	ok(lab_sha256_file(path, fhex, &e) == LAB_EINFRA && strstr(e.msg, path),
	   "missing file: %s", e.msg);
	free(a);
}

int main(void)
{
	test_vectors();
	test_file();
	return tap_done();
}
