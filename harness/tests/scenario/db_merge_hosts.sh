#!/usr/bin/env bash
# Many hosts without LAVA (docs/operations.md): each lab host's controller
# fills its own database; `emmclab db merge` combines them.  Three host
# databases that overlap:
#   A  two nights on host A's board (a1)
#   B  one night on host B's board (b1)
#   C  one night on host C's board (c1), and A merged into it earlier
# merged into M: exactly the union (4 runs, every run's jobs, iterations,
# samples and counters, the latency histograms among them, as in the
# database it came from; where each iteration ran (executor, LAVA job URL,
# worker), the jobs' health flags and the parts' wear readings, also those
# left without a job), parts and kernels not duplicated; a re-merge copies nothing and leaves M byte-identical (as
# SQL); the other order gives the same runs.  Conflicts: a copy of B taken
# while its run was still going (status and samples differ), and a host
# whose board is named like host A's but is another board: reported, not
# copied, exit 1, M unchanged.
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-mergehosts.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
export EMMCLAB_LOCKS="${EMMCLAB_LOCKS:-$T/locks}" # board locks of this test only (ctest sets one per test)
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$1" "$2"; }

# night HOST BOARD MODEL DB: one small night on one host's board
night() {
	cat > "$T/lab-$1.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: host-$1
  transcripts: $T/transcripts-$1
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
boards:
  - name: $2
    type: sim-board
    part: {label: "$3 on $2", model: $3}
    console: {driver: pty, path: $T/sim/$2.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
YAML
	cat > "$T/plan-$1.yaml" <<YAML
suites:
  - name: s
    modes: [fua, cache-nofua]
    iterations: 2
    order: interleave
    precondition_passes: 0
    workloads: [{name: androbench}]
plan:
  name: nightly-$1
  lab: lab-$1.yaml
  suites: [s]
  budget: 5m
YAML
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab-$1.yaml" --state-dir "$T/sim" >/dev/null
	"$EMMCLAB" run --db "$4" --no-report "$T/plan-$1.yaml" >"$T/out" 2>"$T/err" ||
		{ cat "$T/err" >&2; fail "night on host $1"; }
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
}

night a a1 foresee-32g "$T/A.db"
night a a1 foresee-32g "$T/A.db"
night b b1 hardkernel-8g "$T/B.db"
night c c1 foresee-32g "$T/C.db" # the same part model as host A: one part row after the merge
# What a LAVA board of host A stores (docs/lava.md): its fua iterations of the
# first night ran on worker-a; a worn part flags its job; a wear reading whose
# job was deleted stays with its part (job_id NULL).
q "$T/A.db" "update iteration set executor = 'lava',
	job_url = 'http://lava.example.org/scheduler/job/' || (100 + id), worker = 'worker-a'
	where job_id in (select id from job where mode = 'fua' and run_id = (select min(id) from run));
  update job set health_flag = 'life_a 0x0a > life_time_max 0x09' where id = (select min(id) from job);
  insert into part_health (part_id, job_id, at, phase, life_a, life_b, pre_eol, src)
	values ((select min(id) from part), null, '2026-01-01T00:00:00Z', 'after', 10, 9, 2, 'sysfs')"
[ "$(q "$T/B.db" 'select count(*) from part_health')" -gt 0 ] && [ "$(q "$T/B.db" "select count(*) from counter where name glob 'rq_*_lat_b*'")" -gt 0 ] ||
	fail "the simulated nights stored no wear readings or latency histograms"
"$EMMCLAB" db merge --db "$T/C.db" "$T/A.db" >/dev/null || fail "merging A into C"
[ "$(q "$T/A.db" 'select count(*) from run')" = 2 ] && [ "$(q "$T/C.db" 'select count(*) from run')" = 3 ] ||
	fail "host databases not as planned"
echo "ok 1 - three host databases: A 2 runs, B 1, C 1 + A's 2"

# every run by uuid with what it holds, from one database
prints() {
	q "$1" "select r.uuid, r.plan, r.status, r.source,
	  (select count(*) from job j where j.run_id = r.id),
	  (select count(*) from job j where j.run_id = r.id and j.verified_mode = j.mode),
	  (select count(*) from iteration i join job j on j.id = i.job_id where j.run_id = r.id),
	  (select count(*) || ':' || printf('%.6f', total(s.value)) from sample s join iteration i on i.id = s.iteration_id join job j on j.id = i.job_id where j.run_id = r.id),
	  (select count(*) || ':' || total(c.value) from counter c join iteration i on i.id = c.iteration_id join job j on j.id = i.job_id where j.run_id = r.id),
	  (select group_concat(p.label || '/' || coalesce(p.cid, ''), ',') from (select distinct part_id from job where run_id = r.id) x join part p on p.id = x.part_id),
	  (select group_concat(b.name || '/' || coalesce(b.type, '') || '/' || coalesce(b.host, ''), ',') from (select distinct board_id from job where run_id = r.id) x join board b on b.id = x.board_id),
	  (select count(*) from event e where e.run_id = r.id),
	  (select count(*) from transcript t where t.run_id = r.id),
	  (select count(*) || ':' || total(c.value) from counter c join iteration i on i.id = c.iteration_id join job j on j.id = i.job_id where j.run_id = r.id and c.name glob 'rq_*_lat_b*'),
	  (select group_concat(x, ',') from (select j.seq || '/' || j.health_flag as x from job j where j.run_id = r.id and j.health_flag is not null order by x)),
	  (select count(*) || ':' || coalesce(group_concat(x, ','), '') from (select j.mode || '/' || i.workload || '/' || i.n || '/' || i.executor || '/' || coalesce(i.job_url, '') || '/' || coalesce(i.worker, '') as x
	    from iteration i join job j on j.id = i.job_id where j.run_id = r.id and i.executor != 'local' order by x)),
	  (select count(*) || ':' || coalesce(group_concat(x, ','), '') from (select p.label || '/' || j.seq || '/' || h.at || '/' || h.phase || '/' || coalesce(h.life_a, '') || '/' || coalesce(h.life_b, '') || '/' || coalesce(h.pre_eol, '') || '/' || coalesce(h.src, '') as x
	    from part_health h join job j on j.id = h.job_id join part p on p.id = h.part_id where j.run_id = r.id order by x))
	  from run r order by r.uuid"
}
# the wear readings without a job, by part
orphans() {
	q "$1" "select p.label || '/' || coalesce(p.cid, '') || '/' || h.at || '/' || h.phase || '/' || h.life_a || '/' || h.life_b || '/' || h.pre_eol || '/' || h.src
	  from part_health h join part p on p.id = h.part_id where h.job_id is null order by 1"
}
for d in A B C; do prints "$T/$d.db"; done | sort -u > "$T/union.txt"
[ "$(wc -l < "$T/union.txt")" = 4 ] || { cat "$T/union.txt"; fail "expected 4 distinct runs in the union"; }

out=$("$EMMCLAB" db merge --db "$T/M.db" "$T/A.db") || fail "merge A"
echo "$out" | grep -q "merged 2 runs from .*A.db (0 already present)" || fail "merge A: $out"
out=$("$EMMCLAB" db merge --db "$T/M.db" "$T/B.db") || fail "merge B"
echo "$out" | grep -q "merged 1 run from .*B.db (0 already present)" || fail "merge B: $out"
out=$("$EMMCLAB" db merge --db "$T/M.db" "$T/C.db") || fail "merge C"
echo "$out" | grep -q "merged 1 run from .*C.db (2 already present)" || fail "merge C (holds A): $out"
prints "$T/M.db" > "$T/m.txt"
diff "$T/union.txt" "$T/m.txt" || fail "the merged database is not exactly the union"
[ "$(q "$T/M.db" 'select count(*) from part')" = "$(q "$T/M.db" 'select count(distinct label || cid) from part')" ] ||
	fail "duplicate parts"
[ "$(q "$T/M.db" 'select count(*) from part')" = 3 ] || fail "expected 3 parts (a1's and c1's foresee are labelled per board)"
[ "$(q "$T/M.db" 'select count(*) from kernel')" = 1 ] || fail "the one kernel duplicated"
[ "$(q "$T/M.db" 'select count(*) from board')" = 3 ] || fail "expected 3 boards"
lava='2:fua/androbench/1/lava/http://lava\.example\.org/scheduler/job/[0-9]*/worker-a,fua/androbench/2/lava/http://lava\.example\.org/scheduler/job/[0-9]*/worker-a'
grep -q "|nightly-a|.*|$lava|4:foresee-32g on a1/0/" "$T/m.txt" && [ "$(grep -c '|0:|4:' "$T/m.txt")" = 3 ] ||
	{ cat "$T/m.txt"; fail "where A's first night ran, or its wear readings, were not merged"; }
grep -qF "|0/life_a 0x0a > life_time_max 0x09|" "$T/m.txt" || fail "the health flag was not merged"
[ "$(q "$T/M.db" 'select count(*) from part_health')" = "$(($(q "$T/A.db" 'select count(*) from part_health') + $(q "$T/B.db" 'select count(*) from part_health') + $(q "$T/C.db" 'select count(*) from part_health where job_id in (select id from job where run_id in (select id from run where plan = '"'nightly-c'"'))')))" ] ||
	fail "part_health: not every reading merged once"
orphans "$T/A.db" > "$T/orphans.txt"
[ "$(wc -l < "$T/orphans.txt")" = 1 ] && orphans "$T/M.db" | diff "$T/orphans.txt" - ||
	fail "the wear reading without a job was not merged once"
"$EMMCLAB" db check --db "$T/M.db" >/dev/null || fail "db check after merging"
echo "ok 2 - A, B, C merged: exactly the union of 4 runs, nothing duplicated"

q "$T/M.db" .dump > "$T/m1.sql"
for d in C B A C; do
	out=$("$EMMCLAB" db merge --db "$T/M.db" "$T/$d.db") || fail "re-merge $d"
	echo "$out" | grep -q "merged 0 runs" || fail "re-merge $d copied something: $out"
done
q "$T/M.db" .dump > "$T/m2.sql"
cmp -s "$T/m1.sql" "$T/m2.sql" || fail "a re-merge changed the database"
orphans "$T/M.db" | diff "$T/orphans.txt" - || fail "a re-merge duplicated the reading without a job"
for d in C B A; do "$EMMCLAB" db merge --db "$T/M2.db" "$T/$d.db" >/dev/null || fail "merge $d into M2"; done
prints "$T/M2.db" | diff "$T/union.txt" - || fail "another order gives another union"
# the merged database merged on: still the union (a hub of hubs)
"$EMMCLAB" db merge --db "$T/M3.db" "$T/M.db" >/dev/null && "$EMMCLAB" db merge --db "$T/M3.db" "$T/M2.db" >/dev/null ||
	fail "merging merged databases"
prints "$T/M3.db" | diff "$T/union.txt" - || fail "merging merged databases duplicated runs"
orphans "$T/M3.db" | diff "$T/orphans.txt" - || fail "merging merged databases: readings without a job"
echo "ok 3 - re-merge is a no-op (identical SQL dump); any order and merged-of-merged give the union"

# conflict 1: B copied while its run was still going
cp "$T/B.db" "$T/B-early.db"
q "$T/B-early.db" "update run set status = 'running', finished_at = null;
  delete from sample where id = (select max(id) from sample)"
uuid_b=$(q "$T/B.db" 'select uuid from run')
set +e
"$EMMCLAB" db merge --db "$T/M.db" "$T/B-early.db" >"$T/c1.out" 2>"$T/c1.err"; rc=$?
set -e
[ "$rc" = 1 ] || fail "a conflicting copy: exit $rc, expected 1"
grep -q "^conflict: run $uuid_b (plan nightly-b, started .*) differs: here complete, 2 jobs, 4 iterations, [0-9]* samples; in .*B-early.db running, 2 jobs, 4 iterations, [0-9]* samples; kept this database's copy$" "$T/c1.err" ||
	{ cat "$T/c1.err"; fail "the run conflict is not reported clearly"; }
grep -q "merged 0 runs .* (1 already present, 1 conflict: see above)" "$T/c1.out" || fail "summary: $(cat "$T/c1.out")"
q "$T/M.db" .dump | cmp -s - "$T/m1.sql" || fail "a conflict changed the database"

# conflict 2: host D names its board a1 too, but it is another board (type/host)
night d a1 hardkernel-8g "$T/D.db"
q "$T/D.db" "update board set type = 'rock5b', host = 'sdhci-of-dwcmshc'"
night e e1 hardkernel-8g "$T/D.db" # and a run on a board of its own, which merges
set +e
"$EMMCLAB" db merge --db "$T/M.db" "$T/D.db" >"$T/c2.out" 2>"$T/c2.err"; rc=$?
set -e
[ "$rc" = 1 ] || fail "board conflict: exit $rc, expected 1"
grep -q "^conflict: run [0-9a-f-]* not copied: board 'a1' is type 'sim-board', host 'sim' here but type 'rock5b', host 'sdhci-of-dwcmshc' in .*D.db (rename one of them)$" "$T/c2.err" ||
	{ cat "$T/c2.err"; fail "the board conflict is not reported clearly"; }
grep -q "merged 1 run .* (0 already present, 1 conflict: see above)" "$T/c2.out" || fail "summary: $(cat "$T/c2.out")"
[ "$(q "$T/M.db" 'select count(*) from run')" = 5 ] || fail "the clean run of D was not merged"
[ "$(q "$T/M.db" "select count(*) from board where name = 'a1'")" = 1 ] || fail "board a1 duplicated"
[ "$(q "$T/M.db" "select count(*) from job j join board b on b.id = j.board_id join run r on r.id = j.run_id where b.name = 'a1' and r.plan = 'nightly-d'")" = 0 ] ||
	fail "the conflicting run's jobs were attached to host A's board"
echo "ok 4 - conflicts: a run that differs and a board named alike are reported, not copied, exit 1"
echo "db_merge_hosts: ok"
