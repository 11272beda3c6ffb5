/*
 * secret.c - upload tokens: read from an environment variable or from a
 * file nobody else can read, never stored, logged or put in a message
 * (upload_redact scrubs them from server answers).  See upload.h.
 */
#include "upload_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int secret_ok(char *v, size_t *len, const char *what, struct lab_err *e)
{
	size_t n = *len;
	while (n && (v[n - 1] == '\n' || v[n - 1] == '\r' || v[n - 1] == ' ' || v[n - 1] == '\t'))
		v[--n] = '\0';
	*len = n;
	if (n == 0)
		return lab_err_set(e, LAB_EUSAGE, "%s is empty", what);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			/* A newline inside would let the value inject HTTP headers. */
			return lab_err_set(e, LAB_EUSAGE, "%s holds control characters (one line expected)",
					   what);
	return LAB_OK;
}

int upload_secret_env(const char *name, char **out, struct lab_err *e)
{
	*out = NULL;
	const char *v = getenv(name);
	if (!v || !*v)
		return lab_err_set(e, LAB_EUSAGE, "environment variable %s is not set", name);
	char *copy = xstrdup(v);
	size_t n = strlen(copy);
	char what[160];
	snprintf(what, sizeof what, "environment variable %s", name);
	int rc = secret_ok(copy, &n, what, e);
	if (rc) {
		free(copy);
		return rc;
	}
	*out = copy;
	return LAB_OK;
}

int upload_secret_file(const char *path, char **out, struct lab_err *e)
{
	*out = NULL;
	/* O_NONBLOCK: opening a FIFO (or a device) must not wait on the loop; a
	 * regular file reads the same with it, anything else is refused below. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return lab_err_set(e, LAB_EUSAGE, "secret file %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return lab_err_set(e, LAB_EUSAGE, "secret file %s: not a regular file", path);
	}
	if (st.st_mode & 077) {
		close(fd);
		return lab_err_set(e, LAB_EUSAGE,
				   "secret file %s is readable by group or others (mode %04o): chmod 600 it",
				   path, (unsigned)(st.st_mode & 07777));
	}
	char *buf = xmalloc(UPLOAD_SECRET_MAX + 1);
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, UPLOAD_SECRET_MAX - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = errno;
			close(fd);
			free(buf);
			return lab_err_set(e, LAB_EINFRA, "secret file %s: %s", path, strerror(err));
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == UPLOAD_SECRET_MAX) {
			close(fd);
			free(buf);
			return lab_err_set(e, LAB_EUSAGE, "secret file %s is larger than %d bytes", path,
					   UPLOAD_SECRET_MAX);
		}
	}
	close(fd);
	buf[len] = '\0';
	/* Only the first line: a trailing newline from `echo tok > file` is not part of it. */
	char *nl = memchr(buf, '\n', len);
	if (nl) {
		*nl = '\0';
		len = (size_t)(nl - buf);
	}
	char what[300];
	snprintf(what, sizeof what, "secret file %s", path);
	int rc = secret_ok(buf, &len, what, e);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	return LAB_OK;
}

void upload_redact(char *msg, size_t n, const char *secret)
{
	if (!msg || !secret || strlen(secret) < 1)
		return;
	size_t sl = strlen(secret);
	char *p;
	while ((p = strstr(msg, secret)) != NULL) {
		size_t tail = strlen(p + sl);
		if (sl >= 3) {
			memcpy(p, "***", 3);
			memmove(p + 3, p + sl, tail + 1);
		} else {
			memmove(p, p + sl, tail + 1);
		}
	}
	msg[n - 1] = '\0';
}
