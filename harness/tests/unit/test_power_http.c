/* HTTP power drivers against real local servers: the fake device server (Tasmota,
 * Shelly Gen1/Gen2, ESPHome, faults) and a real pdudaemon with a localcmdline PDU. */
#include "http.h"
#include "loop.h"
#include "power.h"
#include "power_fakedev.h"
#include "power_testlib.h"
#include "tap.h"
#include "util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

extern const struct power_driver power_pdudaemon, power_tasmota, power_shelly, power_esphome;

static int port;
static struct loop *L;

static struct power *mk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static struct power *mk(const char *fmt, ...)
{
	char yaml[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(yaml, sizeof yaml, fmt, ap);
	va_end(ap);
	struct lab_err e = {0};
	struct power *p = power_from_yaml(L, "dut2", yaml, &e);
	if (!p)
		printf("# power_new failed: %s\n", e.msg);
	return p;
}

/* The fake server's action log ("<prefix> <relay> on|off" lines). */
static char log_text[8192];
static int log_done;

static void on_log(struct http_req *rq, const struct http_result *res, void *arg)
{
	LAB_UNUSED(rq);
	LAB_UNUSED(arg);
	lab_strlcpy(log_text, res->body, sizeof log_text);
	log_done = 1;
}

static const char *actions(void)
{
	struct http *h = http_ref(L, NULL);
	char url[128];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/log", port);
	log_text[0] = '\0';
	log_done = 0;
	http_req_start(http_req_new(h, "GET", url), on_log, NULL);
	while (!log_done)
		loop_run_once(L, 100);
	http_unref(h);
	return log_text;
}

static void test_tasmota(void)
{
	struct power *p = mk("{driver: tasmota, url: 'http://127.0.0.1:%d/plug/dut2', relay: 1, "
			     "off_time: 300ms, timeout: 5s}", port);
	ok(p != NULL, "tasmota power from YAML");
	if (!p)
		return;
	struct op_res r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "tasmota on (%s)", r.msg);
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "tasmota state reads ON");
	r = run_op(L, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "tasmota off");
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "tasmota state reads OFF");
	r = run_op(L, p, POWER_CYCLE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "tasmota cycle (%s)", r.msg);
	ok(r.ms >= 290, "cycle kept the relay off for off_time (%llu ms)", (unsigned long long)r.ms);
	const char *log = actions();
	ok(strstr(log, "plug/dut2 1 on\nplug/dut2 1 off\nplug/dut2 1 off\nplug/dut2 1 on\n") != NULL,
	   "device saw on, off, off, on in order:\n%s", log);
	power_free(p);

	/* relay 0: the single relay, "Power" / "POWER". */
	p = mk("{driver: tasmota, url: 'http://127.0.0.1:%d/plug/solo/', timeout: 5s}", port);
	r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && strstr(actions(), "plug/solo 0 on") != NULL, "relay 0 uses Power (%s)",
	   r.msg);
	power_free(p);
}

static void test_shelly_esphome(void)
{
	for (int gen = 1; gen <= 2; gen++) {
		struct power *p = mk("{driver: shelly, gen: %d, channel: 1, url: 'http://127.0.0.1:%d/"
				     "shelly%d', timeout: 5s}", gen, port, gen);
		ok(p != NULL, "shelly gen%d from YAML", gen);
		if (!p)
			continue;
		struct op_res r = run_op(L, p, POWER_ON, 5000);
		ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "shelly gen%d on (%s)", gen, r.msg);
		r = run_op(L, p, POWER_OFF, 5000);
		ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "shelly gen%d off (%s)", gen, r.msg);
		r = run_op(L, p, POWER_STATE, 5000);
		ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "shelly gen%d state", gen);
		char want[64];
		snprintf(want, sizeof want, "shelly%d 1 on\nshelly%d 1 off\n", gen, gen);
		ok(strstr(actions(), want) != NULL, "shelly gen%d device saw on, off", gen);
		power_free(p);
	}
	struct power *p = mk("{driver: esphome, switch: relay_1, url: 'http://127.0.0.1:%d/esp', "
			     "timeout: 5s}", port);
	ok(p != NULL, "esphome from YAML");
	if (!p)
		return;
	struct op_res r = run_op(L, p, POWER_ON, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "esphome on (%s)", r.msg);
	r = run_op(L, p, POWER_OFF, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "esphome off (%s)", r.msg);
	r = run_op(L, p, POWER_STATE, 5000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "esphome state");
	ok(strstr(actions(), "esp relay_1 on\nesp relay_1 off\n") != NULL, "esphome device saw on, off");
	power_free(p);
}

static void test_faults(void)
{
	char url[128];
	struct power *p;
	struct op_res r;

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/500/plug/dut2", port);
	p = mk("{driver: tasmota, url: '%s', relay: 1, timeout: 10s}", url);
	r = run_op(L, p, POWER_ON, 15000);
	is_int(r.rc, LAB_EINFRA, "HTTP 500: error");
	char want[300];
	snprintf(want, sizeof want, "tasmota power of dut2 (%s): Power1 On: HTTP 500: Internal error", url);
	ok(strncmp(r.msg, want, strlen(want)) == 0 && strstr(r.msg, "(3 attempts)"),
	   "message names device, request, status (%s)", r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/hang/plug/dut2", port);
	p = mk("{driver: tasmota, url: '%s', timeout: 1s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	is_int(r.rc, LAB_ETIMEOUT, "hanging device: timeout");
	ok(r.ms >= 950 && r.ms < 2500, "no hang past the power timeout (%llu ms)", (unsigned long long)r.ms);
	ok(strstr(r.msg, url) && strstr(r.msg, "1000 ms"), "timeout message: %s", r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/close/shelly1", port);
	p = mk("{driver: shelly, url: '%s', retries: 0, timeout: 5s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, url) &&
	   (strstr(r.msg, "without an answer") || strstr(r.msg, "connection broke")),
	   "early close: %s", r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/badjson/plug/x", port);
	p = mk("{driver: tasmota, url: '%s', timeout: 5s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EPROTO && strstr(r.msg, "not valid JSON") && strstr(r.msg, "Power On"),
	   "truncated JSON: %s", r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/wrongstate/shelly2", port);
	p = mk("{driver: shelly, gen: 2, url: '%s', timeout: 5s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "output=false afterwards"), "relay did not switch: %s",
	   r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/wrongstate/esp", port);
	p = mk("{driver: esphome, switch: s1, url: '%s', timeout: 5s}", url);
	r = run_op(L, p, POWER_OFF, 10000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "reports ON after turn_off"), "esphome: %s", r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d/f/flaky2/plug/dut7", port);
	p = mk("{driver: tasmota, url: '%s', relay: 2, timeout: 10s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "two 503s then success, within retries (%s)", r.msg);
	power_free(p);

	/* Something that is not a Tasmota answers 200 with text. */
	p = mk("{driver: tasmota, url: 'http://127.0.0.1:%d/echo', timeout: 5s}", port);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EPROTO && strstr(r.msg, "not valid JSON"), "a non-Tasmota answer is an error (%s)",
	   r.msg);
	power_free(p);

	snprintf(url, sizeof url, "http://127.0.0.1:%d", fakedev_dead_port());
	p = mk("{driver: esphome, switch: s1, url: '%s', retries: 1, timeout: 5s}", url);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "connect failed") && strstr(r.msg, "(2 attempts)"),
	   "nothing listening: %s", r.msg);
	power_free(p);

	struct lab_err e = {0};
	ok(power_from_yaml(L, "b", "{driver: pdudaemon, hostname: pdu1}", &e) == NULL &&
	   strstr(e.msg, "hostname and port are required"), "pdudaemon without port: %s", e.msg);
	lab_err_clear(&e);
	ok(power_from_yaml(L, "b", "{driver: pdudaemon, alias: a, hostname: h, port: 1}", &e) == NULL,
	   "pdudaemon alias and hostname both: %s", e.msg);
	lab_err_clear(&e);
	ok(power_from_yaml(L, "b", "{driver: tasmota, url: 'ftp://x'}", &e) == NULL &&
	   strstr(e.msg, "http://"), "non-HTTP URL refused: %s", e.msg);
	lab_err_clear(&e);
	unsetenv("EMMCLAB_TEST_NO_SUCH_PW");
	ok(power_from_yaml(L, "b", "{driver: shelly, url: 'http://x', user: admin, "
			   "password_env: EMMCLAB_TEST_NO_SUCH_PW}", &e) == NULL &&
	   strstr(e.msg, "EMMCLAB_TEST_NO_SUCH_PW"), "missing password variable: %s", e.msg);
	lab_err_clear(&e);
	ok(power_from_yaml(L, "b", "{driver: tasmota, url: 'http://x', rellay: 1}", &e) == NULL &&
	   strstr(e.msg, "relay"), "typo suggests the key: %s", e.msg);
}

/* ---- a real pdudaemon ---- */

static pid_t pdud;
static char pdu_dir[] = "/tmp/emmclab-pdu-XXXXXX";
static char pdu_log[256];

static bool port_open(int p)
{
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p),
				.sin_addr.s_addr = htonl(0x7f000001)};
	bool okc = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
	close(s);
	return okc;
}

static int start_pdudaemon(void)
{
	if (access("/usr/sbin/pdudaemon", X_OK) != 0)
		return -1;
	if (!mkdtemp(pdu_dir))
		return -1;
	int pp = fakedev_dead_port();
	char conf[300];
	snprintf(pdu_log, sizeof pdu_log, "%s/actions", pdu_dir);
	snprintf(conf, sizeof conf, "%s/pdudaemon.conf", pdu_dir);
	FILE *f = fopen(conf, "w");
	if (!f)
		return -1;
	fprintf(f,
		"{\"daemon\": {\"hostname\": \"127.0.0.1\", \"port\": %d, \"logging_level\": \"INFO\", "
		"\"listener\": \"http\"},\n"
		" \"pdus\": {\"labpdu\": {\"driver\": \"localcmdline\", \"retries\": 1,\n"
		"   \"cmd_on\": \"echo on %%s >> %s\", \"cmd_off\": \"echo off %%s >> %s\"}},\n"
		" \"aliases\": {\"dut9\": {\"hostname\": \"labpdu\", \"port\": 9}}}\n",
		pp, pdu_log, pdu_log);
	fclose(f);
	char logf[300];
	snprintf(logf, sizeof logf, "%s/pdudaemon.log", pdu_dir);
	char *argv[] = {"/usr/sbin/pdudaemon", "--conf", conf, "--logfile", logf, NULL};
	pdud = lab_spawn(argv, NULL, -1, -1, -1);
	for (int i = 0; i < 150 && pdud > 0; i++) {
		if (port_open(pp))
			return pp;
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
	}
	return -1;
}

static void test_pdudaemon(void)
{
	int pp = start_pdudaemon();
	ok(pp > 0, "real pdudaemon started on 127.0.0.1 (/usr/sbin/pdudaemon, localcmdline PDU)");
	if (pp <= 0)
		return;
	struct power *p = mk("{driver: pdudaemon, url: 'http://127.0.0.1:%d', hostname: labpdu, "
			     "port: 3, off_time: 1s, timeout: 10s}", pp);
	ok(p && strstr(p->device, "labpdu port 3"), "pdudaemon power from YAML (%s)", p ? p->device : "");
	if (!p)
		return;
	struct op_res r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "pdudaemon on (%s)", r.msg);
	r = run_op(L, p, POWER_OFF, 10000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_OFF, "pdudaemon off (%s)", r.msg);
	r = run_op(L, p, POWER_CYCLE, 15000);
	ok(r.rc == LAB_OK && r.state == POWER_IS_ON, "pdudaemon reboot (%s)", r.msg);
	ok(r.ms >= 950, "reboot waited delay=1 between off and on (%llu ms)", (unsigned long long)r.ms);
	ok(power_request(p, POWER_STATE, op_cb, NULL) == LAB_EUSAGE, "no state query on pdudaemon");
	power_free(p);

	p = mk("{driver: pdudaemon, url: 'http://127.0.0.1:%d', alias: dut9, off_time: 0, timeout: 10s}", pp);
	r = run_op(L, p, POWER_CYCLE, 15000);
	ok(r.rc == LAB_OK, "pdudaemon reboot by alias (%s)", r.msg);
	power_free(p);

	p = mk("{driver: pdudaemon, url: 'http://127.0.0.1:%d', hostname: nosuchpdu, port: 1, "
	       "retries: 0, timeout: 10s}", pp);
	r = run_op(L, p, POWER_ON, 10000);
	ok(r.rc == LAB_EINFRA && strstr(r.msg, "nosuchpdu port 1") &&
	   strstr(r.msg, "HTTP 500: Invalid request"), "unknown PDU: %s", r.msg);
	power_free(p);

	char *text = NULL;
	size_t len = 0;
	lab_read_file(pdu_log, 4096, &text, &len, NULL);
	ok(text && strcmp(text, "on 3\noff 3\noff 3\non 3\noff 9\non 9\n") == 0,
	   "the PDU ran on 3, off 3, off 3, on 3, off 9, on 9 in order:\n%s", text ? text : "(none)");
	free(text);
}

static void stop_pdudaemon(void)
{
	if (pdud > 0) {
		kill(pdud, SIGTERM);
		for (int i = 0; i < 50 && waitpid(pdud, NULL, WNOHANG) == 0; i++) {
			struct timespec ts = {0, 100000000};
			nanosleep(&ts, NULL);
		}
		kill(-pdud, SIGKILL);
		waitpid(pdud, NULL, WNOHANG);
	}
	char cmd[300];
	snprintf(cmd, sizeof cmd, "%s/actions", pdu_dir);
	unlink(cmd);
	snprintf(cmd, sizeof cmd, "%s/pdudaemon.conf", pdu_dir);
	unlink(cmd);
	snprintf(cmd, sizeof cmd, "%s/pdudaemon.log", pdu_dir);
	unlink(cmd);
	rmdir(pdu_dir);
}

int main(void)
{
	ok(power_driver_find("tasmota") == &power_tasmota && power_driver_find("shelly") == &power_shelly &&
	   power_driver_find("esphome") == &power_esphome &&
	   power_driver_find("pdudaemon") == &power_pdudaemon, "HTTP drivers registered");
	pid_t srv = fakedev_start(&port);
	ok(srv > 0, "fake device server on 127.0.0.1:%d", port);
	if (srv <= 0)
		return tap_done();
	L = loop_new();
	test_tasmota();
	test_shelly_esphome();
	test_faults();
	test_pdudaemon();
	loop_free(L);
	stop_pdudaemon();
	fakedev_stop(srv);
	return tap_done();
}
