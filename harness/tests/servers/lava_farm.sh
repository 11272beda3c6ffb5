#!/bin/bash
# lava_farm.sh - a real LAVA farm on 127.0.0.1 for the tests: Debian's
# lava-server and lava-dispatcher (2023.01) with PostgreSQL, without systemd.
#
#   lava_farm.sh start|stop|status|env
#
# start   is idempotent: starts PostgreSQL, (re)creates lava-server's database
#         when the package was installed while PostgreSQL was down, makes the
#         superuser "emmclab" and its API token, a qemu device type, a worker
#         with two QEMU (TCG) devices qemu-01 and qemu-02 (tag "emmclab"),
#         and a device qemu-parked (tag "parked") on a worker that never runs,
#         so that jobs for that tag stay queued (the benchmark uses them).
#         Then it runs each daemon with the command of its systemd unit file:
#         gunicorn on 127.0.0.1:$LAVA_FARM_PORT (apache2 is stopped and never
#         left on *:80), the publisher and its event socket on 127.0.0.1, the
#         scheduler and the worker.  Their PIDs go to $LAVA_FARM_DIR/pids.
# stop    stops by PID exactly the daemons start started (and PostgreSQL when
#         start had started it).
# status  exits 0 when every daemon runs, the API answers and the worker is online.
# env     prints LAVA_URL=, LAVA_USER=, LAVA_TOKEN_FILE= (the token itself
#         only ever lives in that 0600 file).
#
# LAVA_FARM_DIR  (default /tmp/emmclab-lava-farm) state: pids, logs, token
# LAVA_FARM_PORT (default 18317) gunicorn; +1 publisher websocket, +2 events
set -euo pipefail

DIR=${LAVA_FARM_DIR:-/tmp/emmclab-lava-farm}
PORT=${LAVA_FARM_PORT:-18317}
PUB_PORT=$((PORT + 1))
EV_PORT=$((PORT + 2))
URL=http://127.0.0.1:$PORT/
WORKER=emmclab-worker
PARKED=emmclab-parked
# LAVA's tools are Debian's Python packages: Debian's interpreter first
export PATH=/usr/bin:/usr/sbin:/bin:/sbin:$PATH
# Every daemon gets the same settings: events on 127.0.0.1 only, and the
# publisher on, without which the scheduler picks jobs up only every 20 s.
export LAVA_YAML_SETTINGS_EVENT_NOTIFICATION=true
export LAVA_SETTINGS_EVENT_SOCKET=tcp://127.0.0.1:$EV_PORT
export LAVA_SETTINGS_INTERNAL_EVENT_SOCKET=ipc://$DIR/events/lava.events

log() { echo "lava_farm: $*" >&2; }
die() { log "$*"; exit 1; }
manage() { lava-server manage "$@"; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2> /dev/null; }
pid_of() { sed -n "s/^$1 //p" "$DIR/pids" 2> /dev/null | tail -1; }

api_up() {
	curl -fsS -o /dev/null --max-time 5 "${URL}api/v0.2/system/version/" 2> /dev/null
}

# waits up to $2 seconds for command $1 to succeed
wait_for() {
	local what=$1 secs=$2 i=0
	while ! eval "$what"; do
		i=$((i + 1))
		[ $i -le $((secs * 5)) ] || return 1
		sleep 0.2
	done
}

need_packages() {
	local p missing=
	for p in lava-server lava-dispatcher postgresql qemu-system-x86 curl; do
		dpkg-query -W -f '${Status}' "$p" 2> /dev/null | grep -q 'ok installed' || missing="$missing $p"
	done
	if [ -n "$missing" ]; then
		echo "SKIP: not installed:$missing"
		exit 77
	fi
}

start_postgres() {
	local ver
	ver=$(pg_lsclusters -h | awk 'NR==1 { print $1 }')
	[ -n "$ver" ] || die "no PostgreSQL cluster (pg_createcluster)"
	if ! pg_lsclusters -h | awk '{ print $4 }' | grep -q online; then
		pg_ctlcluster "$ver" main start
		echo "postgres $ver" >> "$DIR/started"
	fi
	wait_for "su postgres -c 'psql -qtAc \"select 1\"' > /dev/null 2>&1" 30 || die "PostgreSQL does not answer"
}

# lava-server's post-install creates role and database only when PostgreSQL
# was up during the install: do its database step now when it did not.
ensure_database() {
	if ! su postgres -c "psql -qtAc \"select 1 from pg_database where datname='lavaserver'\"" | grep -q 1; then
		log "lava-server's database is missing: rerunning its post-install database step"
		/usr/bin/python3 /usr/share/lava-server/postinst.py --config --db > "$DIR/postinst.log" 2>&1 ||
			die "postinst.py --db failed: $DIR/postinst.log"
	fi
}

stop_apache() {
	# a dependency of lava-server; its init script may have started it
	if [ -x /etc/init.d/apache2 ] && pgrep -x apache2 > /dev/null 2>&1; then
		apache2ctl stop > /dev/null 2>&1 || /etc/init.d/apache2 stop > /dev/null 2>&1 || true
	fi
	wait_for "! pgrep -x apache2 > /dev/null 2>&1" 10 || log "warning: apache2 still running"
}

provision() {
	local devdir=/etc/lava-server/dispatcher-config/devices n
	for n in 01 02 parked; do
		cat > "$devdir/qemu-$n.jinja2" <<EOF
{% extends 'qemu.jinja2' %}
{% set arch = 'x86_64' %}
{% set no_kvm = True %}
{% set memory = 512 %}
{% set netdevice = 'user' %}
{% set mac_addr = '52:54:00:12:35:$( [ $n = parked ] && echo 99 || echo $n)' %}
EOF
	done
	# One Django process for all of it: each `lava-server manage` call costs
	# seconds of start-up.  Prints the API token, then the worker's token.
	local out
	out=$(manage shell -c "
from django.contrib.auth.models import User
from linaro_django_xmlrpc.models import AuthToken
from lava_scheduler_app.models import Device, DeviceType, Tag, Worker
u, _ = User.objects.get_or_create(username='emmclab', defaults={'email': 'emmclab@localhost'})
u.is_superuser = u.is_staff = True
u.save()
t = AuthToken.objects.filter(user=u, description='emmclab tests').first()
if t is None:
    t = AuthToken.objects.create(user=u, description='emmclab tests')
dt, _ = DeviceType.objects.get_or_create(name='qemu')
ws = {}
for name in ('$WORKER', '$PARKED'):
    ws[name], _ = Worker.objects.get_or_create(hostname=name)
for host, wname, tag in (('qemu-01', '$WORKER', 'emmclab'), ('qemu-02', '$WORKER', 'emmclab'),
                         ('qemu-parked', '$PARKED', 'parked')):
    d, _ = Device.objects.get_or_create(hostname=host, defaults={'device_type': dt, 'worker_host': ws[wname]})
    d.health = Device.HEALTH_GOOD
    if d.state != Device.STATE_IDLE and not d.current_job():
        d.state = Device.STATE_IDLE
    d.save()
    d.tags.add(Tag.objects.get_or_create(name=tag)[0])
print('TOKEN', t.secret)
print('WTOKEN', ws['$WORKER'].token)
") || die "provisioning failed"
	(umask 077 && sed -n 's/^TOKEN //p' <<< "$out" > "$DIR/token" &&
		sed -n 's/^WTOKEN //p' <<< "$out" > "$DIR/worker-token")
	[ -s "$DIR/token" ] && [ -s "$DIR/worker-token" ] || die "no token from provisioning"
}

# run NAME CMD...: a daemon in the background, its PID recorded.  It runs in
# $DIR, not the caller's directory: a daemon a later start reuses must not
# hold a checkout that was deleted since (lava-run then fails every job with
# "[Errno 2] No such file or directory").
run() {
	local name=$1
	shift
	alive "$(pid_of "$name")" && return 0
	(cd "$DIR" && exec setsid "$@" >> "$DIR/$name.out" 2>&1 < /dev/null) &
	echo "$name $!" >> "$DIR/pids"
}

start_daemons() {
	local L=$DIR/logs
	# the publisher and gunicorn drop privileges to lavaserver: the event
	# socket's directory and the logs must be theirs
	mkdir -p "$L" "$DIR/events"
	chown lavaserver:lavaserver "$L" "$DIR/events"
	# lava-server-gunicorn.service, bound to 127.0.0.1 instead of apache2
	run gunicorn /usr/bin/gunicorn3 lava_server.wsgi --log-level INFO --log-file "$L/gunicorn.log" \
		-u lavaserver -g lavaserver --worker-class eventlet --workers 2 \
		--bind 127.0.0.1:$PORT --timeout 60
	# lava-publisher.service: websocket and both zmq sockets on 127.0.0.1
	run publisher /usr/bin/lava-server manage lava-publisher --level INFO \
		--log-file "$L/lava-publisher.log" --host 127.0.0.1 --port $PUB_PORT
	wait_for api_up 60 || die "lava-server's API does not answer on $URL ($DIR/gunicorn.out)"
	# lava-scheduler.service
	run scheduler /usr/bin/lava-server manage lava-scheduler --level INFO \
		--log-file "$L/lava-scheduler.log" --event-url tcp://127.0.0.1:$EV_PORT
	# lava-worker.service
	mkdir -p "$DIR/worker"
	run worker /usr/bin/lava-worker --level INFO --url "$URL" --name $WORKER \
		--token-file "$DIR/worker-token" --worker-dir "$DIR/worker" --log-file "$L/lava-worker.log" \
		--job-log-interval 1
}

devices_ready() {
	local out
	out=$(curl -fsS --max-time 5 -H "Authorization: Token $(cat "$DIR/token")" \
		"${URL}api/v0.2/devices/?hostname__in=qemu-01,qemu-02" 2> /dev/null) || return 1
	/usr/bin/python3 -c '
import json, sys
d = json.load(sys.stdin)["results"]
sys.exit(0 if len(d) == 2 and all(x["state"] == "Idle" and x["health"] == "Good" for x in d) else 1)' <<< "$out"
}

worker_online() {
	curl -fsS --max-time 5 -H "Authorization: Token $(cat "$DIR/token")" \
		"${URL}api/v0.2/workers/$WORKER/" 2> /dev/null | grep -q '"state": *"Online"'
}

cmd_start() {
	need_packages
	mkdir -p "$DIR"
	chmod 755 "$DIR"
	local t0=$SECONDS
	start_postgres
	stop_apache
	ensure_database
	provision
	start_daemons
	wait_for worker_online 60 || die "worker $WORKER does not come online ($DIR/logs/lava-worker.log)"
	wait_for devices_ready 30 || die "qemu-01/qemu-02 are not Idle/Good"
	stop_apache
	log "up in $((SECONDS - t0)) s: $URL"
	cmd_env
}

cmd_stop() {
	local name pid
	[ -f "$DIR/pids" ] || return 0
	# the worker first (it kills its running jobs), gunicorn last
	for name in worker scheduler publisher gunicorn; do
		pid=$(pid_of $name)
		alive "$pid" || continue
		kill -TERM -- "-$pid" 2> /dev/null || kill -TERM "$pid" 2> /dev/null || true
		wait_for "! kill -0 $pid 2> /dev/null" 20 || kill -KILL -- "-$pid" 2> /dev/null || true
	done
	rm -f "$DIR/pids"
	if grep -q '^postgres ' "$DIR/started" 2> /dev/null; then
		pg_ctlcluster "$(awk '/^postgres / { print $2 }' "$DIR/started")" main stop || true
		sed -i '/^postgres /d' "$DIR/started"
	fi
}

cmd_status() {
	local name
	for name in gunicorn publisher scheduler worker; do
		alive "$(pid_of $name)" || { log "$name not running"; return 1; }
	done
	# up, not idle: a job of an earlier test may still hold a device
	api_up && [ -s "$DIR/token" ] && worker_online
}

cmd_env() {
	echo "LAVA_URL=$URL"
	echo "LAVA_USER=emmclab"
	echo "LAVA_TOKEN_FILE=$DIR/token"
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
*) sed -n '2,25p' "$0" >&2; exit 2 ;;
esac
