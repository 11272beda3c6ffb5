/* qemu_boot.c - DIR/boot of a virtual board (see qemu_boot.h). */
#include "qemu_boot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define QEMU_BOOT_MAX (64 * 1024)

char *qemu_boot_dir(const char *dir, const char *board)
{
	if (dir && dir[0])
		return xstrdup(dir);
	const char *tmp = getenv("TMPDIR");
	return xasprintf("%s/emmclab-qemu-%s", tmp && tmp[0] ? tmp : "/tmp", board);
}

int qemu_boot_write(const char *dir, const struct qemu_boot *b, struct lab_err *e)
{
	const char *keys[] = {"kernel", "initrd", "append"};
	const char *vals[] = {b->kernel, b->initrd, b->append};
	struct lab_buf out;
	lab_buf_init(&out, QEMU_BOOT_MAX);
	int rc = LAB_OK;
	for (size_t i = 0; i < LAB_ARRAY_SIZE(keys) && rc == LAB_OK; i++) {
		const char *v = vals[i] ? vals[i] : "";
		if (strpbrk(v, "\r\n")) {
			rc = lab_err_set(e, LAB_EUSAGE, "qemu boot %s: newline in the value", keys[i]);
			break;
		}
		if (lab_buf_printf(&out, "%s=%s\n", keys[i], v) != LAB_OK)
			rc = lab_err_set(e, LAB_EUSAGE, "qemu boot: values longer than %d bytes",
					 QEMU_BOOT_MAX);
	}
	if (rc == LAB_OK) {
		char *path = xasprintf("%s/boot", dir);
		if (lab_mkdir_p(dir, 0755) != 0)
			rc = lab_err_set(e, LAB_EINFRA, "qemu boot: cannot create %s: %s", dir,
					 strerror(errno));
		else
			rc = lab_write_file_atomic(path, lab_buf_cstr(&out), out.len, e);
		free(path);
	}
	lab_buf_free(&out);
	return rc;
}

int qemu_boot_read(const char *dir, struct qemu_boot *b, bool *found, struct lab_err *e)
{
	char *path = xasprintf("%s/boot", dir);
	char *data = NULL;
	size_t len = 0;
	struct stat st;
	memset(b, 0, sizeof *b);
	*found = false;
	if (stat(path, &st) != 0 && errno == ENOENT) {
		free(path);
		return LAB_OK;
	}
	int rc = lab_read_file(path, QEMU_BOOT_MAX, &data, &len, e);
	free(path);
	if (rc != LAB_OK)
		return rc;
	char *save = NULL;
	for (char *line = strtok_r(data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq = '\0';
		char **slot = strcmp(line, "kernel") == 0 ? &b->kernel :
			      strcmp(line, "initrd") == 0 ? &b->initrd :
			      strcmp(line, "append") == 0 ? &b->append : NULL;
		if (slot && !*slot)
			*slot = xstrdup(eq + 1);
	}
	free(data);
	*found = true;
	return LAB_OK;
}

void qemu_boot_free(struct qemu_boot *b)
{
	free(b->kernel);
	free(b->initrd);
	free(b->append);
	memset(b, 0, sizeof *b);
}
