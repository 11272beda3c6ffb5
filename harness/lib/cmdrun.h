/*
 * cmdrun.h - run one external command on the loop (power exec, deploy exec):
 * argv only, never a shell; stdin /dev/null; stdout and stderr captured into
 * capped buffers by loop fd watches; the child is in its own process group
 * (lab_spawn) and reaped by the loop.  cmdrun_kill() SIGKILLs the whole group.
 *
 * Ownership: cmdrun_start() returns an object owned by the loop machinery.
 * The callback runs once, from the loop's child callback, after the child
 * exited and its pipes were drained; the object is freed right after the
 * callback returns.  cmdrun_kill() instead: no callback, freed at once
 * (the killed child is still reaped by the loop).  Never from inside the callback.
 */
#ifndef EMMCLAB_CMDRUN_H
#define EMMCLAB_CMDRUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include "loop.h"
#include "opt.h"
#include "util.h"

struct cmdrun;
/* wstatus as from waitpid; out/err: captured text (NUL-terminated, capped). */
typedef void (*cmdrun_cb)(struct cmdrun *c, int wstatus, const char *out, const char *err,
			  void *arg);

int cmdrun_start(struct loop *l, char *const argv[], size_t cap, cmdrun_cb cb, void *arg,
		 struct cmdrun **out, struct lab_err *e);
void cmdrun_kill(struct cmdrun *c);

/*
 * Expand a template: every "{name}" in every element is replaced by the value
 * of that name (keys/vals, n pairs; a NULL value is "").  An unknown
 * placeholder is an error naming it (LAB_EUSAGE).  A value lands inside one
 * argv element and is never parsed again: a placeholder inside the script of
 * a `sh -c SCRIPT` template is an error (pass it as an argument after the
 * script instead).  Returns a NULL-terminated
 * argv to free with cmdrun_argv_free().
 */
int cmdrun_expand(const struct opt_strlist *tmpl, const char *const keys[],
		  const char *const vals[], size_t n, char ***out, struct lab_err *e);
void cmdrun_argv_free(char **argv);
/* "prog arg arg" for messages, at most size-1 chars. */
void cmdrun_describe(char *const argv[], char *buf, size_t size);
/* "exited with 3: <last stderr line>" / "killed by signal 9" / "exited with 0". */
void cmdrun_status_text(int wstatus, const char *err, char *buf, size_t size);

#endif
