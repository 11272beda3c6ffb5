/* util: the safe-name grammar, path joins that cannot leave their directory, and the
 * terminal-safe text escaping (strings and the stream filter). */
#include "tap.h"
#include "util.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void test_names(void)
{
	static const char *const good[] = {"rk1", "sim-1", "6.1.0-fua+cqe", "a_b.c", "X",
					   "0123456789012345678901234567890123456789012345678901234567890123"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(good); i++)
		ok(lab_name_check(good[i]) == NULL, "good name '%s'", good[i]);
	static const char *const bad[] = {"", "a;b", "$(reboot)", "`id`", "../x", "a/b", "a b",
					  "a\x1b[2J", "a\tb", "a\nb", "-rf", ".hidden", "a..b", "x=y",
					  "{board}", "a'b", "a\"b", "a\\b", "\xc3\xa9t\xc3\xa9",
					  "01234567890123456789012345678901234567890123456789012345678901234"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(bad); i++)
		ok(lab_name_check(bad[i]) != NULL, "bad name #%zu refused (%s)", i,
		   lab_name_check(bad[i]) ? lab_name_check(bad[i]) : "accepted");
}

static void test_path_join(void)
{
	char *p = NULL;
	struct lab_err e = {0};
	is_int(lab_path_join("/srv/tr", "rk1-1-20261201T000000Z.log", &p, &e), LAB_OK, "join");
	is_str(p, "/srv/tr/rk1-1-20261201T000000Z.log", "joined path");
	free(p);
	is_int(lab_path_join("/srv/tr/", "x", &p, &e), LAB_OK, "join after a slash");
	is_str(p, "/srv/tr/x", "no double slash");
	free(p);
	static const char *const bad[] = {"", ".", "..", "../etc/passwd", "a/../../b", "/etc/x",
					  "a\nb", "a\x7f"};
	for (size_t i = 0; i < LAB_ARRAY_SIZE(bad); i++) {
		lab_err_clear(&e);
		p = (char *)"untouched";
		int rc = lab_path_join("/srv/tr", bad[i], &p, &e);
		ok(rc == LAB_EUSAGE && p == NULL, "escape #%zu refused (%s)", i, e.msg);
	}
}

static void test_escape(void)
{
	char buf[256];
	lab_text_escape(buf, sizeof buf, "plain text, tab\tand newline\n");
	is_str(buf, "plain text, tab\tand newline\n", "clean text unchanged");
	ok(lab_text_clean("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"), "UTF-8 is clean");
	lab_text_escape(buf, sizeof buf, "\x1b[2J\x1b]0;title\x07\r\x7f");
	is_str(buf, "\\x1b[2J\\x1b]0;title\\x07\\x0d\\x7f", "C0 and DEL escaped");
	lab_text_escape(buf, sizeof buf, "a\xc2\x9b" "31mb");
	is_str(buf, "a\\xc2\\x9b31mb", "C1 control (U+009B CSI) escaped");
	lab_text_escape(buf, sizeof buf, "x\x9b\xff\xc3(\xed\xa0\x80");
	is_str(buf, "x\\x9b\\xff\\xc3(\\xed\\xa0\\x80", "invalid UTF-8 bytes escaped one by one");
	ok(!lab_text_clean("a\x1b"), "ESC is not clean");
	size_t need = lab_text_escape(buf, 6, "ab\x01");
	is_int((long long)need, 6, "needed length");
	is_str(buf, "ab", "cut at a whole escape");
}

static void test_stream(void)
{
	char *mem = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&mem, &len);
	FILE *f = lab_text_stream(m);
	ok(f != NULL, "stream");
	setvbuf(f, NULL, _IONBF, 0); /* every fputc is its own write: sequences get split */
	const char *in = "ok \xe2\x82\xac \x1b[31mred\xc2\x9b end\xe2\x82";
	for (const char *p = in; *p; p++)
		fputc(*p, f);
	fclose(f);
	fclose(m);
	is_str(mem, "ok \xe2\x82\xac \\x1b[31mred\\xc2\\x9b end\\xe2\\x82",
	       "split UTF-8 kept, controls escaped, a cut sequence at the end escaped");
	free(mem);
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The stream, written in pieces of any size, gives what lab_text_escape gives
 * for the whole text (the stream copies runs of plain ASCII in one write). */
static void test_stream_pieces(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	int bad = 0;
	for (int t = 0; t < 3000 && !bad; t++) {
		char in[200];
		size_t n = 1 + (size_t)(splitmix(&seed) % (sizeof in - 1));
		for (size_t i = 0; i < n; i++) {
			static const unsigned char pick[] = {'a', ' ', '\t', '\n', 0x1b, 0x7f, 0x01, 0xc2, 0x9b,
							     0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80,
							     0xed, 0xa0, 0xff, '[', '~'};
			uint64_t r = splitmix(&seed);
			in[i] = (char)(r % 3 ? pick[(r >> 8) % sizeof pick] : 0x20 + (r >> 16) % 95);
		}
		in[n] = '\0';
		char *mem = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&mem, &len);
		FILE *f = lab_text_stream(m);
		setvbuf(f, NULL, _IONBF, 0);
		for (size_t i = 0; i < n;) {
			size_t k = 1 + (size_t)(splitmix(&seed) % 9);
			if (k > n - i)
				k = n - i;
			fwrite(in + i, 1, k, f);
			i += k;
		}
		fclose(f);
		fclose(m);
		char want[1024];
		lab_text_escape(want, sizeof want, in);
		if (strcmp(mem, want) != 0) {
			bad = 1;
			fprintf(stderr, "# stream %s\n# escape %s\n", mem, want);
		}
		free(mem);
	}
	ok(!bad, "3000 random texts written in pieces: the stream agrees with lab_text_escape");
}

/* The shortest round-trip text by binary search on the precision (the
 * definition lab_fmt_double must agree with, byte for byte). */
static void fmt_reference(char *buf, size_t n, double v)
{
	int lo = 1, hi = 17;
	while (lo < hi) {
		int p = lo + (hi - lo) / 2;
		snprintf(buf, n, "%.*g", p, v);
		if (strtod(buf, NULL) == v)
			hi = p;
		else
			lo = p + 1;
	}
	snprintf(buf, n, "%.*g", lo, v);
}

static void test_fmt_double(void)
{
	static const double fixed[] = {0.0, -0.0, 1, -1, 0.1, 0.5, 1e10, 123000, 1.5e-7, 1e21, 1e22,
				       1e-300, 5e-324, 9.45552829783908e-310, 2.2250738585072014e-308, 1.7976931348623157e308, 4096, 12.345, 2.0 / 3,
				       1e15, 1e16, 123456789012345, 1234567890123456, 9007199254740993.0,
				       INFINITY, -INFINITY, NAN, 100, 0.30000000000000004, 3.14159,
				       24.8831278, -24.8831278, 1e-4, 0.0001234, 9.9999e-5, 999999999.5, 1e9, 10, 20,
				       1500, -1500, 7, -0.5, 0.25, 123456.789012345, 0.1 + 0.2};
	char a[40], b[40];
	int bad = 0;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(fixed); i++) {
		lab_fmt_double(a, sizeof a, fixed[i]);
		fmt_reference(b, sizeof b, fixed[i]);
		ok(strcmp(a, b) == 0, "fmt_double %s == %s", a, b);
	}
	/* random bit patterns, random short decimals, integers and measured-looking values */
	uint64_t x = 0x9e3779b97f4a7c15u;
	long n = 0;
	for (int i = 0; i < 200000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		double v;
		switch (i % 5) {
		case 0:
			memcpy(&v, &x, sizeof v);
			break;
		case 1:
			v = (double)(x % 100000) / pow(10, (double)(x >> 60));
			break;
		case 2:
			v = (double)(int64_t)(x >> 20) * ((x & 1) ? 1000 : 1);
			break;
		case 3:
			v = (double)(x >> 11) * 0x1.0p-53 * 300.0;
			break;
		default: { /* what an agent prints: up to 12 digits, a point anywhere, a sign */
			char t[40];
			snprintf(t, sizeof t, "%s%llu", (x & 2) ? "-" : "",
				 (unsigned long long)((x >> 8) % 1000000000000ull));
			int dec = (int)((x >> 3) % 14);
			v = strtod(t, NULL) / pow(10, dec);
			snprintf(t, sizeof t, "%.*f", dec, v);
			v = strtod(t, NULL);
			break;
		}
		}
		lab_fmt_double(a, sizeof a, v);
		fmt_reference(b, sizeof b, v);
		if (strcmp(a, b) != 0 && bad++ < 5)
			fprintf(stderr, "# fmt_double differs: %s vs %s\n", a, b);
		n++;
	}
	ok(bad == 0, "fmt_double: %d of %ld values differ from the binary search", bad, n);
}

static size_t dir_entries(const char *dir)
{
	size_t n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* lab_atomic: a streamed file replaces the old one only when every write made
 * it; an abort or a failed write (here: over RLIMIT_FSIZE, EFBIG, as a full
 * disk gives ENOSPC) leaves the old file and no temporary file behind. */
static void test_atomic(void)
{
	char dir[] = "/tmp/emmclab-test-atomic.XXXXXX";
	if (!mkdtemp(dir)) {
		ok(0, "mkdtemp");
		return;
	}
	char path[128];
	snprintf(path, sizeof path, "%s/report.html", dir);
	struct lab_err e = {0};
	ok(lab_write_file_atomic(path, "old\n", 4, &e) == LAB_OK, "write_file_atomic");
	struct lab_atomic a;
	ok(lab_atomic_open(&a, path, &e) == LAB_OK, "atomic_open");
	for (int i = 0; i < 20000; i++)
		fprintf(a.f, "line %d\n", i);
	char *data = NULL;
	size_t len = 0;
	ok(lab_read_file(path, 1 << 20, &data, &len, &e) == LAB_OK && len == 4 &&
		   memcmp(data, "old\n", 4) == 0,
	   "the old file stays while the new one is written");
	free(data);
	ok(lab_atomic_commit(&a, &e) == LAB_OK, "atomic_commit");
	data = NULL;
	ok(lab_read_file(path, 1 << 20, &data, &len, &e) == LAB_OK && len > 100000 &&
		   strncmp(data, "line 0\n", 7) == 0 && strstr(data, "line 19999\n"),
	   "committed: the whole new file");
	free(data);
	is_int(dir_entries(dir), 1, "no temporary file after commit");

	ok(lab_atomic_open(&a, path, &e) == LAB_OK, "atomic_open again");
	fputs("abandoned\n", a.f);
	lab_atomic_abort(&a);
	data = NULL;
	ok(lab_read_file(path, 1 << 20, &data, &len, &e) == LAB_OK && len > 100000, "abort keeps the file");
	free(data);
	is_int(dir_entries(dir), 1, "no temporary file after abort");

	struct rlimit old, lim;
	getrlimit(RLIMIT_FSIZE, &old);
	lim = old;
	lim.rlim_cur = 8192;
	void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
	ok(setrlimit(RLIMIT_FSIZE, &lim) == 0, "RLIMIT_FSIZE 8 KiB");
	ok(lab_atomic_open(&a, path, &e) == LAB_OK, "atomic_open under the limit");
	for (int i = 0; i < 20000; i++)
		fprintf(a.f, "new %d\n", i);
	struct lab_err fe = {0};
	int rc = lab_atomic_commit(&a, &fe);
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, prev);
	ok(rc == LAB_EINFRA && strstr(fe.msg, "report.html.tmp."), "a failed write fails the commit (%s)",
	   fe.msg);
	data = NULL;
	ok(lab_read_file(path, 1 << 20, &data, &len, &e) == LAB_OK && len > 100000 &&
		   strncmp(data, "line 0\n", 7) == 0,
	   "the old file is untouched after a failed write");
	free(data);
	is_int(dir_entries(dir), 1, "no temporary file after a failed write");
	unlink(path);
	rmdir(dir);
}

/* lab_buf_reset: empty, room kept up to its bound, the cap (max) kept */
static void test_buf_reset(void)
{
	struct lab_buf b;
	lab_buf_init(&b, 10000);
	lab_buf_append(&b, "abcdef", 6);
	char *room = b.data;
	lab_buf_reset(&b, 4096);
	ok(b.len == 0 && b.data == room && b.cap == 256 && b.data[0] == '\0',
	   "reset keeps a small buffer's room, empty and terminated");
	is_str(lab_buf_cstr(&b), "", "reads as empty");
	char big[5000];
	memset(big, 'x', sizeof big);
	ok(lab_buf_append(&b, big, sizeof big) == LAB_OK && b.cap == 8192, "grown to 8 KiB");
	lab_buf_reset(&b, 4096);
	ok(b.len == 0 && b.data == NULL && b.cap == 0, "room past the bound is given back");
	ok(b.max == 10000 && lab_buf_append(&b, big, sizeof big) == LAB_OK &&
		   lab_buf_append(&b, big, sizeof big) == LAB_OK && lab_buf_append(&b, "y", 1) == LAB_EINFRA,
	   "the cap stays");
	lab_buf_free(&b);
}

/* Pages of [p, p+n) that are present and mapped by this process alone
 * (/proc/self/pagemap bits 63 and 56); the kernel's shared zero page, which a
 * read of an untouched page maps, is present but not exclusive.  -1 when
 * pagemap cannot be read; *pages: how many pages the range touches. */
static long pages_own(const void *p, size_t n, long *pages)
{
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t a = (uintptr_t)p / (uintptr_t)ps, z = ((uintptr_t)p + n - 1) / (uintptr_t)ps;
	*pages = (long)(z - a + 1);
	int fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return -1;
	long own = 0;
	for (uintptr_t i = a; i <= z; i++) {
		uint64_t e;
		if (pread(fd, &e, sizeof e, (off_t)(i * sizeof e)) != (ssize_t)sizeof e) {
			own = -1;
			break;
		}
		own += (e >> 63 & 1) && (e >> 56 & 1);
	}
	close(fd);
	return own;
}

/* xcalloc_written: zeros, and its pages already written (no zero-page
 * mapping for a later write to copy and flush); the control shows that
 * calloc's pages, read first, are the zero page */
static void test_calloc_written(void)
{
	size_t n = 1 << 20, ps = (size_t)sysconf(_SC_PAGESIZE), sum = 0;
	long pages;
	/* large blocks as mappings of their own, as for the end-of-night report
	 * (glibc would otherwise raise its threshold after an earlier test freed
	 * a large block, and serve this one from reused heap) */
	lab_mem_bulk_mapped();
	unsigned char *c = xcalloc(n, 1);
	for (size_t i = 0; i < n; i += ps)
		sum += c[i];
	long own = pages_own(c + ps, n - 2 * ps, &pages);
	ok(own >= 0, "/proc/self/pagemap reads");
	ok(sum == 0 && own == 0, "control: calloc's untouched pages, read, are the shared zero page (%ld of %ld own)",
	   own, pages);
	free(c);
	unsigned char *w = xcalloc_written(n / 8, 8);
	for (size_t i = 0; i < n; i += ps)
		sum += w[i];
	ok(sum == 0 && w[n - 1] == 0, "xcalloc_written's memory reads zero");
	own = pages_own(w + ps, n - 2 * ps, &pages);
	ok(pages > 200 && own == pages, "its pages are its own already (%ld of %ld)", own, pages);
	free(w);
}

int main(void)
{
	test_names();
	test_calloc_written();
	test_buf_reset();
	test_path_join();
	test_escape();
	test_stream();
	test_stream_pieces();
	test_fmt_double();
	test_atomic();
	return tap_done();
}
