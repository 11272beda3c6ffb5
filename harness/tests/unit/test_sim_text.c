/* Simulator: command-line splitting and tokenising shared by the simulated U-Boot and shell. */
#include "sim_board.h"
#include "tap.h"
#include "util.h"

#include <string.h>

static const char *var(void *ctx, const char *name)
{
	LAB_UNUSED(ctx);
	if (strcmp(name, "?") == 0)
		return "127";
	if (strcmp(name, "kernel_addr_r") == 0)
		return "0x02080000";
	if (strcmp(name, "HOME") == 0)
		return "/root";
	return NULL;
}

static void test_split(void)
{
	struct sim_seg s[8];
	size_t n = sim_split_list("echo @@BEGIN-1@@; test -x '/a;b' && echo yes || echo \"no;\"; echo @@END-1@@ $?", s, 8);
	is_int((long long)n, 5, "five segments");
	is_str(s[0].text, "echo @@BEGIN-1@@", "first");
	is_str(s[1].text, "test -x '/a;b'", "quoted ; does not split");
	is_int(s[2].op, SIM_OP_AND, "&&");
	is_int(s[3].op, SIM_OP_OR, "||");
	is_str(s[3].text, "echo \"no;\"", "double-quoted ; does not split");
	is_int(s[4].op, SIM_OP_SEQ, ";");
	sim_segs_free(s, n);
	n = sim_split_list("  ;; ; ", s, 8);
	is_int((long long)n, 0, "empty segments dropped");
}

static void test_tokens(void)
{
	struct sim_tok t[16];
	size_t n = sim_tokenize("export PS1='EMMCLAB-abc$ '", var, NULL, t, 16);
	is_int((long long)n, 2, "two words");
	is_str(t[1].s, "PS1=EMMCLAB-abc$ ", "single quotes keep $ and spaces");
	sim_toks_free(t, n);

	n = sim_tokenize("echo @@END-1@@ $? \"$HOME/x\" \\$HOME ${kernel_addr_r}", var, NULL, t, 16);
	is_int((long long)n, 6, "six words");
	is_str(t[2].s, "127", "$? expands");
	is_str(t[3].s, "/root/x", "variables expand in double quotes");
	is_str(t[4].s, "$HOME", "backslash escapes $");
	sim_toks_free(t, n);

	n = sim_tokenize("tftp ${kernel_addr_r} Image", var, NULL, t, 16);
	is_str(t[1].s, "0x02080000", "${var} expands");
	sim_toks_free(t, n);

	n = sim_tokenize("echo QUJD | base64 -d >> /tmp/f 2>/dev/null", var, NULL, t, 16);
	is_int((long long)n, 9, "words and operators");
	is_int(t[2].type, TOK_PIPE, "pipe");
	is_int(t[5].type, TOK_APPEND, ">>");
	is_str(t[6].s, "/tmp/f", "append target");
	is_int(t[7].type, TOK_OUT, "2>");
	is_int(t[7].fd, 2, "2> is fd 2");
	sim_toks_free(t, n);

	n = sim_tokenize("cmd 2>&1 >out", var, NULL, t, 16);
	is_int(t[1].type, TOK_DUP, "2>&1");
	is_int(t[2].type, TOK_OUT, ">");
	sim_toks_free(t, n);

	n = sim_tokenize("echo '' \"\"", var, NULL, t, 16);
	is_int((long long)n, 3, "empty quoted words are words");
	sim_toks_free(t, n);

	/* an unset variable's word is empty, never the word before it (the
	 * word buffer is kept from word to word and from call to call) */
	n = sim_tokenize("echo $NOPE", var, NULL, t, 16);
	is_int((long long)n, 2, "two words");
	is_str(n == 2 ? t[1].s : NULL, "", "$NOPE: empty");
	sim_toks_free(t, n);
	n = sim_tokenize("$NOPE x", var, NULL, t, 16);
	is_str(n == 2 ? t[0].s : NULL, "", "$NOPE first: empty, not the last call's word");
	sim_toks_free(t, n);
}

static void test_base64(void)
{
	struct lab_buf b;
	lab_buf_init(&b, 1024);
	ok(sim_base64_decode("aGVsbG8g\nd29ybGQ=", 17, &b), "decode with a newline");
	is_str(lab_buf_cstr(&b), "hello world", "decoded");
	b.len = 0;
	ok(!sim_base64_decode("aGV*bG8=", 8, &b), "bad character rejected");
	lab_buf_free(&b);
}

static void test_kv(void)
{
	struct sim_kv kv = {0};
	sim_kv_set(&kv, "serverip", "10.0.0.1");
	sim_kv_set(&kv, "bootargs", "a");
	sim_kv_set(&kv, "ipaddr", "10.0.0.2");
	is_str(kv.k[0], "bootargs", "kept sorted (printenv order)");
	sim_kv_set(&kv, "bootargs", NULL);
	ok(sim_kv_get(&kv, "bootargs") == NULL, "delete");
	is_int((long long)kv.n, 2, "two left");
	struct sim_kv c = {0};
	sim_kv_copy(&c, &kv);
	is_str(sim_kv_get(&c, "ipaddr"), "10.0.0.2", "copy");
	sim_kv_clear(&kv);
	sim_kv_clear(&c);
}

int main(void)
{
	test_split();
	test_tokens();
	test_base64();
	test_kv();
	return tap_done();
}
