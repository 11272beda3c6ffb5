/*
 * qemu_boot.h - the hand-over between the `qemu` deploy method and the
 * `qemu` power driver of a virtual board: deploy writes what to boot
 * (kernel, initrd, kernel command line) into DIR/boot, power-on reads it.
 * A file rather than shared memory, so `emmclab board power on` in another
 * process boots what the last deploy prepared.  Plain synchronous file I/O
 * on a small local file (bounded, never a device or socket).
 */
#ifndef EMMCLAB_QEMU_BOOT_H
#define EMMCLAB_QEMU_BOOT_H

#include <stdbool.h>
#include "util.h"

struct qemu_boot {
	char *kernel, *initrd, *append; /* malloc'd; NULL when absent */
};

/* The state directory: dir when set, else $TMPDIR (or /tmp)/emmclab-qemu-BOARD. Malloc'd. */
char *qemu_boot_dir(const char *dir, const char *board);
/* Write DIR/boot atomically.  Values must not contain newlines (LAB_EUSAGE). */
int qemu_boot_write(const char *dir, const struct qemu_boot *b, struct lab_err *e);
/* Read DIR/boot into *b (caller frees with qemu_boot_free); *found = false and
 * LAB_OK when there is none. */
int qemu_boot_read(const char *dir, struct qemu_boot *b, bool *found, struct lab_err *e);
void qemu_boot_free(struct qemu_boot *b);

#endif
