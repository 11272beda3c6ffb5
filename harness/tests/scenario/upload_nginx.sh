#!/bin/bash
# upload_nginx.sh - the http-put bundle against a real nginx (WebDAV PUT) on
# 127.0.0.1: server down first, then every file arrives byte-identical to the
# spool copy; over TLS the test CA is refused until ca_file names it; basic
# auth from a mode-600 password file; a redirect to another host name is not
# followed with credentials.
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
command -v nginx >/dev/null || { echo "SKIP: nginx not installed (Debian nginx-core)"; exit 77; }
command -v openssl >/dev/null || { echo "SKIP: openssl not installed"; exit 77; }

tmp=$(mktemp -d /tmp/emmclab-upload-nginx-XXXXXX)
ngx_pid=
cleanup() {
	local rc=$?
	if [ -n "$ngx_pid" ]; then kill "$ngx_pid" 2>/dev/null; wait "$ngx_pid" 2>/dev/null || true; fi
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$tmp/error.log" ] && tail -5 "$tmp/error.log" >&2; exit 1; }
cd "$tmp"
db="$tmp/lab.db"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rows() { sqlite3 "$db" "SELECT count(*) FROM upload WHERE $1"; }
P1=$(free_port)
P2=$(free_port)

# A test CA and a server certificate for 127.0.0.1 / localhost.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 -subj "/CN=emmclab test CA" 2>/dev/null
openssl req "${ec[@]}" -keyout server.key -out server.csr -subj "/CN=127.0.0.1" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n' > ext.cnf
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
	-extfile ext.cnf 2>/dev/null
pw="pw-$RANDOM$RANDOM"
printf 'lab:%s\n' "$(openssl passwd -apr1 "$pw")" > htpasswd
(umask 077; echo "$pw" > password)
mkdir -p www www-tls
sed -e "s|@DIR@|$tmp|g" -e "s|@HTTP_PORT@|$P1|g" -e "s|@HTTPS_PORT@|$P2|g" \
	"$EMMCLAB_SRC/harness/tests/servers/nginx-dav.conf.in" > nginx.conf

start_nginx() {
	nginx -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/error.log" &
	ngx_pid=$!
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/127.0.0.1/$P2") 2>/dev/null && return 0
		sleep 0.05
	done
	fail "nginx did not start"
}

"$EMMCLAB" import --db "$db" "$EMMCLAB_SRC/results/reference/androbench-sdhci-sprd.csv" >/dev/null
uuid=$(sqlite3 "$db" "SELECT uuid FROM run WHERE id = 1")
day=$(sqlite3 "$db" "SELECT substr(started_at, 1, 10) FROM run WHERE id = 1")
common="timeout: 5s
    connect_timeout: 2s
    retry_backoff: 100ms
    retry_max_backoff: 200ms
    files: [html, json, csv, sqlite]"
cat > plain.yaml <<EOF
uploads:
  - name: dav
    kind: http-put
    url: http://127.0.0.1:$P1/dav/results
    $common
EOF
cat > tls.yaml <<EOF
uploads:
  - name: dav-tls
    kind: http-put
    url: https://127.0.0.1:$P2/dav/tls
    user: lab
    password_file: password
    $common
EOF
sed 's|^    user: lab|    ca_file: ca.pem\n    user: lab|' tls.yaml > tls-ca.yaml
cat > moved.yaml <<EOF
uploads:
  - name: dav-moved
    kind: http-put
    url: https://127.0.0.1:$P2/moved/m
    ca_file: ca.pem
    user: lab
    password_file: password
    $common
EOF

# 1. nginx down: queued and charged, exit 3; twice.
for i in 1 2; do
	set +e
	if [ $i = 1 ]; then "$EMMCLAB" upload --db "$db" --run 1 --config plain.yaml > out.txt 2>&1
	else "$EMMCLAB" upload --db "$db" --retry --now > out.txt 2>&1; fi
	rc=$?
	set -e
	[ $rc = 3 ] || fail "nginx down, round $i: exit $rc"
done
[ "$(rows "target = 'dav' AND state = 'pending' AND attempts = 2")" = 4 ] || fail "4 files pending after 2 attempts"

# 2. nginx up: every file arrives, byte for byte.
start_nginx
"$EMMCLAB" upload --db "$db" --retry --now > out.txt 2>&1 || { cat out.txt; fail "plain PUT"; }
[ "$(rows "target = 'dav' AND state = 'sent'")" = 4 ] || fail "not all sent"
for f in report.html report.json report.csv results.db; do
	cmp -s "www/dav/results/$day/$uuid/$f" "uploads/$uuid/$f" || fail "$f not byte-identical"
done
[ "$(sqlite3 "www/dav/results/$day/$uuid/results.db" 'SELECT count(*) FROM sample')" = 40 ] ||
	fail "snapshot on the server is not the store"

# 3. TLS without the test CA: verification fails, nothing is sent, it stays pending.
set +e
"$EMMCLAB" upload --db "$db" --run 1 --config tls.yaml > out.txt 2>&1; rc=$?
set -e
[ $rc = 3 ] || fail "TLS with an unknown CA: exit $rc"
[ "$(rows "target = 'dav-tls' AND state = 'pending' AND last_error LIKE '%certificate%'")" = 4 ] ||
	fail "certificate error not recorded: $(sqlite3 "$db" "SELECT last_error FROM upload WHERE target = 'dav-tls' LIMIT 1")"
[ -z "$(ls www-tls)" ] || fail "something arrived without verification"
# With ca_file (given as an override on the command line) it goes through.
"$EMMCLAB" upload --db "$db" --retry --now --config tls-ca.yaml > out.txt 2>&1 || { cat out.txt; fail "TLS PUT"; }
for f in report.html report.json report.csv results.db; do
	cmp -s "www-tls/dav/tls/$day/$uuid/$f" "uploads/$uuid/$f" || fail "TLS: $f not byte-identical"
done
grep -q "$pw" out.txt && fail "password in the output"
sqlite3 "$db" .dump | grep -q "$pw" && fail "password in the store"

# 4. A group-readable password file is refused before anything is sent.
chmod 640 password
"$EMMCLAB" upload --db "$db" --run 1 --config tls-ca.yaml > out.txt 2>&1 && fail "group-readable password accepted"
grep -q "readable by group or others" out.txt || fail "no reason given: $(cat out.txt)"
chmod 600 password
"$EMMCLAB" upload --db "$db" --retry --now --config tls-ca.yaml > out.txt 2>&1 || fail "re-send after chmod"

# 5. A redirect to another host name is not followed with credentials.
"$EMMCLAB" upload --db "$db" --run 1 --config moved.yaml > out.txt 2>&1 && fail "cross-host redirect followed"
[ "$(rows "target = 'dav-moved' AND state = 'failed' AND last_error LIKE 'redirect to another host refused%'")" = 4 ] ||
	fail "redirect refusal not recorded: $(sqlite3 "$db" "SELECT last_error FROM upload WHERE target = 'dav-moved' LIMIT 1")"
[ ! -e "www-tls/dav/m" ] || fail "the redirected PUT landed"
grep -c '"PUT /moved/' access.log >/dev/null || true
echo "upload_nginx: ok"
