#!/usr/bin/env bash
# `emmclab kernel quirks` and `kernel cover-letter` on a database the real
# controller filled from the simulated lab (types with source: simulated):
#  - bfore (foresee-32g, CQE host): reliable write is expensive in the model,
#    no loss in the power-fail suite -> proposed, but only with
#    --accept simulated (the figures are the simulator's), never by default;
#  - b5 (industrial-8g): reliable write is cheaper than write + flush there:
#    significantly slower without FUA -> not proposed;
#  - bsprd (sprd-32g, sim fault lose-writes): loses acknowledged records
#    without FUA -> never proposed, whatever is accepted;
#  - bnopf (hardkernel-8g): speed suite only -> "no power-fail data".
# Then the cover letter: subject with N from --series, per-part 2x2 with
# CIs, power-fail table, quirk entries, patch subjects, every figure tagged
# SIMULATED, <= 75 columns, no control bytes (a patch subject holds an ESC).
set -euo pipefail
: "${EMMCLAB:?}" "${EMMCLAB_SRC:?}"
T=$(mktemp -d /tmp/emmclab-quirkscover.XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T"
}
trap cleanup EXIT
export EMMCLAB_LOCKS="${EMMCLAB_LOCKS:-$T/locks}" # board locks of this test only (ctest sets one per test)
[ -z "${KEEP:-}" ] || trap - EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
# a C comment block as one line: continuation " * " and blanks folded
flat() { tr '\n\t' '  ' < "$1" | sed 's/ \* / /g' | tr -s ' '; }

cat > "$T/lab.yaml" <<YAML
include:
  - $EMMCLAB_SRC/boards/types/sim-board.yaml
lab:
  name: kquirks
  transcripts: $T/transcripts
  sim: {time_scale: 1000, seed: 3, autoboot_floor: 1s}
types:
  - name: nocqe
    host: sim
    source: simulated
    has_cqe: false
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
  - name: cqe
    host: sim
    source: simulated
    has_cqe: true
    uboot: {prompt: "=> ", char_delay: 5ms, chunk: 8, bootargs: "console=ttyS0,115200"}
    timeouts: {power: 5s, first_output: 3s, bootloader: 10s, boot: 20s, login: 10s, command: 1m, job: 10m}
    modes:
      fua: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=1"}
      cache-nofua: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=1"}
      fua-cqe: {cmdline: "mmc_block.fua=on mmc_core.disable_cqe=0"}
      cache-nofua-cqe: {cmdline: "mmc_block.fua=off mmc_core.disable_cqe=0"}
boards:
  - name: bfore
    type: cqe
    part: {label: "DUT1 Foresee", model: foresee-32g}
    console: {driver: pty, path: $T/sim/bfore.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 5, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: true}
  - name: b5
    type: nocqe
    part: {label: "DUT5 industrial", model: industrial-8g}
    console: {driver: pty, path: $T/sim/b5.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 6, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false}
  - name: bsprd
    type: nocqe
    part: {label: "sprd part", model: sprd-32g}
    console: {driver: pty, path: $T/sim/bsprd.tty}
    power: {driver: tasmota, url: "http://127.0.0.1:$PORT/plug/bsprd", off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-sprd, cqe: false, login: true, faults: [lose-writes=8]}
  - name: bnopf
    type: nocqe
    part: {label: "DUT3 Hardkernel", model: hardkernel-8g}
    console: {driver: pty, path: $T/sim/bnopf.tty}
    power: {driver: pdudaemon, url: "http://127.0.0.1:$PORT", hostname: pdu, port: 7, off_time: 50ms}
    deploy: {driver: none}
    sim: {host: sdhci-of-arasan, cqe: false}
YAML

cat > "$T/speed.yaml" <<YAML
suites:
  - name: speed
    modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]
    iterations: 4
    order: interleave
    precondition_passes: 0
    workloads: [{name: androbench}]
plan:
  name: kq-speed
  lab: lab.yaml
  suites: [speed]
  budget: 5m
YAML
cat > "$T/pf.yaml" <<YAML
suites:
  - name: pf
    modes: [fua, cache-nofua]
    iterations: 3
    order: interleave
    workloads: [{name: powerfail, args: {records: 3000, record_size: 4096, cut_min: 200ms, cut_max: 600ms}}]
plan:
  name: kq-powerfail
  lab: lab.yaml
  boards: [bfore, b5, bsprd]
  suites: [pf]
  budget: 5m
YAML

run() { # PLAN expected-exit
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null 2>&1 || true
	rm -rf "$T/sim"
	"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T/sim" >/dev/null
	set +e
	"$EMMCLAB" run --db "$T/lab.db" --no-report "$T/$1" >"$T/out" 2>"$T/err"
	rc=$?
	set -e
	"$EMMCLAB" sim stop --state-dir "$T/sim" >/dev/null
	[ "$rc" = "$2" ] || { cat "$T/err" >&2; fail "run $1 exited $rc, expected $2"; }
}
if [ -z "${REUSE:-}" ]; then
run speed.yaml 0
run pf.yaml 1 # bsprd loses data: exit 1
else cp "$REUSE" "$T/lab.db"; fi
echo "ok 1 - simulated lab: speed suite on three parts, power-fail suite on two"

# quirks, default: lab evidence only -> nothing proposed, each part says why
"$EMMCLAB" kernel quirks --db "$T/lab.db" --min-cuts 3 >"$T/q0.c"
flat "$T/q0.c" | grep -q "0 of 4 parts proposed" || { cat "$T/q0.c"; fail "default quirks proposed something"; }
! grep -q "MMC_FIXUP" "$T/q0.c" || fail "a quirk line from simulated evidence without --accept"
flat "$T/q0.c" | grep -q "not proposed: DUT1 Foresee: 0 power cuts without FUA from accepted sources, 3 needed" ||
	{ cat "$T/q0.c"; fail "bfore not refused for lack of accepted evidence"; }
echo "ok 2 - simulated evidence is never a quirk unless accepted"

"$EMMCLAB" kernel quirks --db "$T/lab.db" --min-cuts 3 --accept simulated -o "$T/q.c"
cat "$T/q.c"
flat "$T/q.c" | grep -q "1 of 4 parts proposed" || fail "expected exactly one proposal"
grep -Eq '^	MMC_FIXUP\("NCard", 0x88, 0x103, add_quirk_mmc,' "$T/q.c" || fail "no MMC_FIXUP line for bfore's part (NCard)"
[ "$(grep -c MMC_FIXUP "$T/q.c")" = 1 ] || fail "more than one quirk line"
flat "$T/q.c" | grep -Eq "DUT1 Foresee \(CID [0-9a-f]{32}\): androbench/[a-z_]+ [+-][0-9.]+% \[[+-][0-9.]+%, [+-][0-9.]+%\] 95% CI, p [0-9.e+-]+, n 4/4" ||
	fail "evidence comment lacks effect, CI, p, n"
flat "$T/q.c" | grep -Eq "power-fail without FUA: 3 cuts, 0 lost, 0 torn, 0 corrupt" || fail "evidence lacks cuts/lost/torn"
flat "$T/q.c" | grep -q "evidence: simulated - NOT measured on a real card" || fail "simulated evidence not said"
flat "$T/q.c" | grep -Eq "not proposed: DUT5 industrial: slower without FUA: androbench/rand_write" || fail "the part slower without FUA is not refused"
flat "$T/q.c" | grep -Eq "not proposed: sprd part: acknowledged data lost in cache-nofua \[simulated\]: [1-3] of 3 cuts, [1-9][0-9]* lost" ||
	fail "the losing part is not refused for its loss"
flat "$T/q.c" | grep -q 'not proposed: DUT3 Hardkernel: no power-fail data' || fail "no-power-fail part not listed"
# the output is a valid C initializer list
{ echo '#define MMC_FIXUP(n, m, o, f, d) { n, m, o, d }'; echo 'struct q { const char *n; unsigned m, o, d; };'
  echo "#define $(grep -o 'MMC_QUIRK_[A-Z_]*' "$T/q.c" | head -1) 1"; echo 'int add_quirk_mmc;'
  echo 'const struct q t[] = {'; cat "$T/q.c"; echo '};'; } > "$T/q_check.c"
cc -std=c11 -Wall -Werror -c "$T/q_check.c" -o "$T/q_check.o" || fail "the quirk text does not compile"
echo "ok 3 - --accept simulated: bfore proposed with its evidence; loss and no-data parts refused; it compiles"

# cover letter with a series
mkdir "$T/series"
printf 'From 1 Mon Sep 17 00:00:00 2001\nFrom: A <a@example.org>\nSubject: [PATCH 1/2] mmc: core: add\n the avoid-FUA quirk\n\nbody\n' > "$T/series/0001-a.patch"
printf 'From 1 Mon Sep 17 00:00:00 2001\nSubject: [PATCH 2/2] mmc: block: use it \033[2J\n\nbody\n' > "$T/series/0002-b.patch"
printf 'Subject: [PATCH 0/2] old cover\n' > "$T/series/0000-cover-letter.patch"
"$EMMCLAB" kernel cover-letter --db "$T/lab.db" --min-cuts 3 --accept simulated --series "$T/series" -o "$T/cover.txt"
cat "$T/cover.txt"
head -1 "$T/cover.txt" | grep -q '^Subject: \[PATCH 0/2\] mmc: ' || fail "subject line"
awk 'length($0) > 75 { print "line " NR " is " length($0) " columns"; bad=1 } END { exit bad }' "$T/cover.txt" || fail "a line over 75 columns"
! LC_ALL=C grep -q "$(printf '[\001-\010\013-\037\177]')" "$T/cover.txt" || fail "a control byte in the cover letter"
grep -q '^  \[PATCH 1/2\] mmc: core: add the avoid-FUA quirk$' "$T/cover.txt" || fail "folded patch subject"
grep -q '^  \[PATCH 2/2\] mmc: block: use it \\x1b\[2J$' "$T/cover.txt" || fail "patch subject not escaped"
! grep -q "old cover" "$T/cover.txt" || fail "the old cover letter counted as a patch"
grep -q "^DUT1 Foresee$" "$T/cover.txt" && grep -q "^DUT5 industrial$" "$T/cover.txt" || fail "no part blocks"
grep -Eq '^    FUA +[0-9.]+ \+-[0-9.]+ n=4 +[0-9.]+ \+-[0-9.]+ n=4$' "$T/cover.txt" || fail "2x2 FUA row with CQE column"
grep -Eq '^    no FUA, CQE off: +[+-][0-9.]+% \[[+-][0-9.]+%, [+-][0-9.]+%\] p ' "$T/cover.txt" || fail "FUA effect without CQE"
grep -Eq '^    no FUA, CQE on: ' "$T/cover.txt" || fail "FUA effect with CQE"
grep -Eq '^    CQE on, with FUA: ' "$T/cover.txt" && grep -Eq '^    CQE on, without FUA: ' "$T/cover.txt" || fail "CQE effects"
grep -Eq '^    interaction: +ratio ' "$T/cover.txt" || fail "interaction"
grep -Eq '^    cache-nofua +SIMULATED +3 +[0-9]+ +[0-9]+ +[1-9][0-9]* +0 +0 LOSS$' "$T/cover.txt" || fail "power-fail loss row of the sprd part"
grep -Eq '^    fua +SIMULATED +3 ' "$T/cover.txt" || fail "power-fail fua row"
grep -q "power-fail: no data" "$T/cover.txt" || fail "part without power-fail data not said"
grep -q "^    \[SIMULATED: fitted to published data\]$" "$T/cover.txt" && grep -q "^    \[SIMULATED: assumed (no published data)\]$" "$T/cover.txt" ||
	fail "simulated figures not labelled"
! grep -q "~$" "$T/cover.txt" || fail "a line was cut"
! grep -q "^    \\[lab: measured\\]" "$T/cover.txt" || fail "a simulated figure labelled as measured"
grep -q "^Proposed quirk entries (1 of 4 parts):" "$T/cover.txt" || fail "proposal summary"
grep -Eq '^        MMC_FIXUP\("NCard"' "$T/cover.txt" || fail "quirk line in the letter"
echo "ok 4 - cover letter: subject, 2x2 with CIs, power-fail per mode, quirks, subjects, <= 75 columns, escaped"

# usage errors
set +e
"$EMMCLAB" kernel quirks --db "$T/lab.db" --accept lab,bogus 2>"$T/e1"; r1=$?
"$EMMCLAB" kernel frobnicate 2>/dev/null; r2=$?
"$EMMCLAB" kernel quirks --db "$T/none.db" 2>/dev/null; r3=$?
"$EMMCLAB" kernel cover-letter --db "$T/lab.db" --series "$T/nodir" 2>"$T/e4"; r4=$?
set -e
[ "$r1" = 2 ] && grep -q "unknown source kind 'lab'" "$T/e1" || fail "--accept lab,bogus: exit $r1"
[ "$r2" = 2 ] || fail "unknown subcommand exit $r2"
[ "$r3" = 2 ] && [ ! -e "$T/none.db" ] || fail "missing db: exit $r3 (or created)"
[ "$r4" = 2 ] && grep -q "nodir" "$T/e4" || fail "bad --series exit $r4"
echo "ok 5 - usage errors exit 2"
echo "quirks_cover: ok"
