/* Unit tests of transcripts: timestamp prefixes, raw bytes, long-line split, marks,
 * rotation at the size cap, sha256 and byte count, flush timer, the directory cap. */
#include "console.h"
#include "tap.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char *slurp(const char *path, size_t *len)
{
	char *s = NULL;
	struct lab_err e = {0};
	if (lab_read_file(path, 64 << 20, &s, len, &e) != LAB_OK)
		return NULL;
	return s;
}

/* whether the file's whole text matches the extended regex; its text in *text
 * (the caller frees it; NULL if unreadable) */
static bool file_matches(const char *path, const char *ere, char **text)
{
	size_t n = 0;
	regex_t re;
	*text = slurp(path, &n);
	if (!*text || regcomp(&re, ere, REG_EXTENDED) != 0)
		return false;
	bool m = regexec(&re, *text, 0, NULL, 0) == 0;
	regfree(&re);
	return m;
}

static int count_lines(const char *s, size_t n)
{
	int k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == '\n';
	return k;
}

/* a file of n bytes whose modification time is age_s seconds ago */
static void aged_file(const char *dir, const char *name, size_t n, int age_s)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	char buf[1024] = {0};
	for (size_t w = 0; fd >= 0 && w < n; w += sizeof buf)
		if (write(fd, buf, n - w < sizeof buf ? n - w : sizeof buf) < 0)
			break;
	if (fd >= 0)
		close(fd);
	struct timespec ts[2] = {{time(NULL) - age_s, 0}, {time(NULL) - age_s, 0}};
	utimensat(AT_FDCWD, p, ts, 0);
}

static bool exists_in(const char *dir, const char *name)
{
	char p[512];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void test_prune(void)
{
	char dir[] = "/tmp/emmclab-trp-XXXXXX";
	ok(mkdtemp(dir) != NULL, "prune: temp dir");
	aged_file(dir, "b1-1-old.log", 4000, 3600);
	aged_file(dir, "b1-1-old.log.1", 4000, 3590);
	aged_file(dir, "b2-1-mid.log", 4000, 1800);
	aged_file(dir, "b3-1-new.log", 4000, 600);
	aged_file(dir, "open-now.log", 4000, 0);       /* written just now: maybe open */
	aged_file(dir, "notes.txt", 100000, 7200);     /* not a transcript: never touched */
	struct lab_err e = {0};
	size_t nrm = 99;
	uint64_t freed = 99;
	ok(transcript_prune(dir, 0, &nrm, &freed, &e) == LAB_OK && nrm == 0 && freed == 0,
	   "prune: 0 is no cap");
	ok(transcript_prune(dir, 12000, &nrm, &freed, &e) == LAB_OK, "prune: %s", e.msg);
	ok(nrm == 2 && freed == 8000, "prune: the two oldest went (%zu files, %llu bytes)", nrm,
	   (unsigned long long)freed);
	ok(!exists_in(dir, "b1-1-old.log") && !exists_in(dir, "b1-1-old.log.1") &&
		   exists_in(dir, "b2-1-mid.log") && exists_in(dir, "b3-1-new.log") &&
		   exists_in(dir, "open-now.log") && exists_in(dir, "notes.txt"),
	   "prune: oldest first, newer ones and other files kept");
	ok(transcript_prune(dir, 1, &nrm, &freed, &e) == LAB_OK && nrm == 2 && exists_in(dir, "open-now.log"),
	   "prune: a transcript written in the last minute stays even over the cap");
	ok(transcript_prune("/nonexistent-emmclab-dir", 1, &nrm, &freed, &e) == LAB_OK && nrm == 0,
	   "prune: no directory, nothing to do");
	char p[512];
	snprintf(p, sizeof p, "%s/open-now.log", dir);
	unlink(p);
	snprintf(p, sizeof p, "%s/notes.txt", dir);
	unlink(p);
	ok(rmdir(dir) == 0, "prune: nothing else left");
}

int main(void)
{
	char dir[] = "/tmp/emmclab-tr-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char path[256], path1[256];
	snprintf(path, sizeof path, "%s/t.log", dir);
	snprintf(path1, sizeof path1, "%s/t.log.1", dir);
	struct lab_err e = {0};
	struct transcript *t = NULL;

	/* format and raw bytes */
	is_int(transcript_open(path, 0, &t, &e), LAB_OK, "open");
	is_str(transcript_path(t), path, "path");
	transcript_write(t, "U-Boot\r\nbin:\x01\xff\x1b[0m", 18);
	transcript_write(t, "|tail\n", 6);
	transcript_mark(t, "== power %s ==", "on");
	transcript_write(t, "next\n", 5);
	char sha[65];
	uint64_t bytes = 0;
	is_int(transcript_close(t, sha, &bytes, &e), LAB_OK, "close");
	size_t n = 0;
	char *s = slurp(path, &n);
	ok(s != NULL, "file written");
	is_int((long long)bytes, (long long)n, "byte count");
	regex_t re;
	regcomp(&re,
		"^\\[ +0\\.[0-9]{6}\\] U-Boot\r\n"
		"\\[ +0\\.[0-9]{6}\\] bin:\x01\xff\x1b\\[0m\\|tail\n"
		"\\[ +0\\.[0-9]{6}\\] == power on ==\n"
		"\\[ +0\\.[0-9]{6}\\] next\n$",
		REG_EXTENDED);
	ok(regexec(&re, s, 0, NULL, 0) == 0, "timestamps on every line, raw bytes kept");
	regfree(&re);
	char sha2[65];
	lab_sha256(s, n, sha2);
	is_str(sha, sha2, "sha256 matches the file");
	free(s);

	/* long lines are split at 4 KiB */
	t = NULL;
	transcript_open(path, 0, &t, &e);
	char *blob = xmalloc(10000);
	memset(blob, 'x', 10000);
	transcript_write(t, blob, 10000);
	transcript_close(t, NULL, NULL, &e);
	s = slurp(path, &n);
	is_int(count_lines(s, n), 2, "10000 bytes without newline -> 4096 + 4096 + rest");
	ok(n > 10000 && n < 10000 + 3 * 20, "all bytes kept plus prefixes (%zu)", n);
	free(s);

	/* rotation at the cap: one old copy kept */
	t = NULL;
	transcript_open(path, 4096, &t, &e);
	char line[100];
	memset(line, 'y', sizeof line);
	line[99] = '\n';
	for (int i = 0; i < 200; i++)
		transcript_write(t, line, sizeof line);
	is_int(transcript_close(t, sha, &bytes, &e), LAB_OK, "close after rotation");
	struct stat st0, st1;
	ok(stat(path, &st0) == 0 && stat(path1, &st1) == 0, "PATH and PATH.1 exist");
	ok(st0.st_size <= 4096 + 200 && st1.st_size <= 4096 + 200, "both near the cap (%lld, %lld)",
	   (long long)st0.st_size, (long long)st1.st_size);
	ok(bytes > (uint64_t)(st0.st_size + st1.st_size), "total counts the rotated-away data too");
	lab_sha256_file(path, sha2, &e);
	is_str(sha, sha2, "sha256 is of the last file");

	/* flush timer: data visible without close */
	struct loop *l = loop_new();
	t = NULL;
	transcript_open(path, 0, &t, &e);
	transcript_set_loop(t, l);
	transcript_write(t, "soon\n", 5);
	ok(stat(path, &st0) == 0 && st0.st_size == 0, "buffered at first");
	uint64_t t0 = lab_now_ms();
	while (lab_now_ms() - t0 < 400)
		loop_run_once(l, 20);
	ok(stat(path, &st0) == 0 && st0.st_size > 5, "flushed by the timer (%lld)",
	   (long long)st0.st_size);
	transcript_close(t, NULL, NULL, &e);

	/* a mark never splits a line of board output: it waits for the line's end,
	 * or (a prompt that stays open) for the flush timer */
	t = NULL;
	transcript_open(path, 0, &t, &e);
	transcript_set_loop(t, l);
	transcript_write(t, "U-Boot 2023.", 12);
	transcript_mark(t, "== power on ==");
	transcript_write(t, "01 (Jan 01)\nvboard# ", 20);
	transcript_mark(t, "== power off ==");
	t0 = lab_now_ms();
	while (lab_now_ms() - t0 < 400)
		loop_run_once(l, 20);
	transcript_write(t, "late\n", 5);
	transcript_close(t, NULL, NULL, &e);
	ok(file_matches(path,
			"^\\[ +0\\.[0-9]{6}\\] U-Boot 2023\\.01 \\(Jan 01\\)\n"
			"\\[ +0\\.[0-9]{6}\\] == power on ==\n"
			"\\[ +0\\.[0-9]{6}\\] vboard# \n"
			"\\[ +0\\.[0-9]{6}\\] == power off ==\n"
			"\\[ +0\\.[0-9]{6}\\] late\n$",
			&s),
	   "marks on their own lines, board lines whole");
	free(s);

	/* the mark's wait is the full flush interval from the mark, also when a
	 * flush of earlier output is about to fire: a line still being echoed
	 * when that flush fires (a command typed on U-Boot's echo) stays whole */
	t = NULL;
	transcript_open(path, 0, &t, &e);
	transcript_set_loop(t, l);
	transcript_write(t, "=> ", 3); /* starts the flush timer: due at 200 ms */
	t0 = lab_now_ms();
	while (lab_now_ms() - t0 < 190)
		loop_run_once(l, 5);
	transcript_write(t, "setenv autoload", 15);
	transcript_mark(t, "== U-Boot prompt reached =="); /* its wait ends >= 390 ms */
	while (lab_now_ms() - t0 < 225) /* past the earlier flush */
		loop_run_once(l, 5);
	transcript_write(t, " 'no'\r\n", 7);
	transcript_close(t, NULL, NULL, &e);
	bool whole = file_matches(path,
				  "^\\[ +0\\.[0-9]{6}\\] => setenv autoload 'no'\r\n"
				  "\\[ +0\\.[0-9]{6}\\] == U-Boot prompt reached ==\n$",
				  &s);
	ok(whole, "a mark waits its own interval for the line's end: %s", s ? s : "(unreadable)");
	free(s);
	loop_free(l);

	/* open failure names the path */
	lab_err_clear(&e);
	t = NULL;
	ok(transcript_open("/nonexistent-dir/x.log", 0, &t, &e) != LAB_OK &&
		   strstr(e.msg, "/nonexistent-dir/x.log"),
	   "open error names the file: %s", e.msg);
	free(blob);
	unlink(path);
	unlink(path1);
	rmdir(dir);
	test_prune();
	return tap_done();
}
