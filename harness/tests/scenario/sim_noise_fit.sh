#!/bin/bash
# sim_noise_fit.sh - the simulator's noise is fitted to the published spread:
# through the real simulated lab (emmclab sim + emmclab run), 20 iterations per
# mode of the ext4 copy on DUT1-5 and of AndroBench on the sprd board; for
# every published cell (results/reference/*.csv) the simulated steady-state
# SD (CV for AndroBench) must lie within 0.55..1.5 of the published one and
# the simulated mean within 4 standard errors of the published mean, and the
# first fscopy after start must show the published warm-up.  The simulator is
# deterministic under its seed, so this cannot flake; it fails when a fitted
# spread drifts (the old per-part SDs missed DUT2 fua by a factor 3.4).
set -euo pipefail
: "${EMMCLAB:?path of the emmclab binary}" "${EMMCLAB_SRC:?source dir}"
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
T=$(mktemp -d /tmp/emmclab-noisefit-XXXXXX)
cleanup() {
	"$EMMCLAB" sim stop --state-dir "$T" >/dev/null 2>&1 || true
	[ -n "${KEEP:-}" ] || rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
N=20

# The default lab: its own ptys, power port and seed, no ser2net, fast clock.
sed -e "s|\.\./types/sim-board.yaml|$EMMCLAB_SRC/boards/types/sim-board.yaml|" \
	-e "s|/tmp/emmclab-sim|$T|g" -e "s|127\.0\.0\.1:16421|127.0.0.1:$PORT|g" \
	-e "s|^    seed: 1$|    seed: 7|" -e "s|^    time_scale: 2000 |    time_scale: 20000 |" \
	-e "/ser2net_port/d" -e "s|soc: ums512,$|soc: ums512}|" \
	"$EMMCLAB_SRC/boards/labs/sim-lab.yaml" >"$T/lab.yaml"
grep -q '^    time_scale: 20000 ' "$T/lab.yaml" && grep -q '^    seed: 7$' "$T/lab.yaml" ||
	fail "could not rewrite boards/labs/sim-lab.yaml (seed/time_scale lines changed?)"
cat >"$T/suites.yaml" <<YAML
suites:
  - name: fit-fscopy
    modes: [fua, cache-nofua, fua-cqe, cache-nofua-cqe]
    iterations: $N
    order: sequential
    reboot_between_modes: false
    precondition_passes: 0
    exclude_warmup: false
    workloads:
      - {name: fscopy, args: {tree: synthetic, scale: 1.0, seed: 6002}}
  - name: fit-androbench
    modes: [fua, cache-nofua]
    iterations: $N
    order: sequential
    reboot_between_modes: false
    precondition_passes: 0
    exclude_warmup: false
    workloads:
      - {name: androbench, args: {seq_mib: 64, req_mib: 32, rand_mib: 64, rand_ios: 4096}}
YAML
for p in fscopy androbench; do
	case $p in fscopy) b="[dut1, dut2, dut3, dut4, dut5]" ;; *) b="[sprd1]" ;; esac
	printf 'include: [suites.yaml]\nplan:\n  name: fit-%s\n  lab: lab.yaml\n  boards: %s\n  suites: [fit-%s]\n' \
		"$p" "$b" "$p" >"$T/plan-$p.yaml"
done
"$EMMCLAB" sim start "$T/lab.yaml" --state-dir "$T" >"$T/start.out" || fail "sim start: $(cat "$T/start.out")"
for p in fscopy androbench; do
	"$EMMCLAB" run --db "$T/lab.db" --no-report --no-upload --transcripts "$T/tr" "$T/plan-$p.yaml" \
		>"$T/run-$p.out" 2>"$T/run-$p.err" || { tail -20 "$T/run-$p.err" >&2; fail "emmclab run $p"; }
done
"$EMMCLAB" db export --db "$T/lab.db" -o "$T/export.csv" >/dev/null

# The published cells, computed here from the CSVs (not from sim_calib.c).
$PY - "$EMMCLAB_SRC/results/reference" "$T/export.csv" "$N" <<'PY'
import csv, math, statistics as st, sys
ref, exp, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
def rows(p):
    return list(csv.DictReader(l for l in open(p, newline="") if not l.startswith("#")))
bad = []
def check(what, cond, msg):
    print(("ok   " if cond else "FAIL ") + what + ": " + msg)
    if not cond:
        bad.append(what)

sim = {}
for r in rows(exp):
    if r["source"] != "simulated":
        bad.append("source " + r["source"])
    key = (r["board"], r["verified_mode"], r["workload"], r["metric"])
    sim.setdefault(key, []).append((int(r["iteration"]), float(r["value"])))
sim = {k: [v for _, v in sorted(x)] for k, x in sim.items()}

fs = {}
for r in rows(ref + "/fs-copy-benchmark.csv"):
    fs.setdefault(r["dut"], {}).setdefault(r["mode"], []).append((int(r["run"]), float(r["seconds"])))
cells = 0
for dut, modes in sorted(fs.items()):
    x = {m: [v for _, v in sorted(s)] for m, s in modes.items()}
    d = [v[0] - st.mean(v[1:]) for v in x.values()]
    warm = all(w > 0 for w in d)  # every series' first iteration the slower: a warm-up
    board = dut.lower()
    for mode, v in sorted(x.items()):
        pub = v[1:] if warm else v
        got = sim.get((board, mode, "fscopy", "wall_time"))
        if not got or len(got) != n:
            check(f"{dut} {mode}", False, f"{len(got or [])} simulated iterations, want {n}")
            continue
        s = got[1:]  # the first fscopy after start may be a warm-up
        ratio = st.stdev(s) / st.stdev(pub)
        se = st.stdev(s) / math.sqrt(len(s))
        check(f"{dut} {mode} SD", 0.55 <= ratio <= 1.5,
              f"simulated {st.stdev(s):.3f} s vs published {st.stdev(pub):.3f} s (x{ratio:.2f})")
        check(f"{dut} {mode} mean", abs(st.mean(s) - st.mean(pub)) <= 4 * se,
              f"simulated {st.mean(s):.2f} vs published {st.mean(pub):.2f} (4 SE {4 * se:.2f})")
        cells += 1
    first = sim[(board, "fua", "fscopy", "wall_time")]
    extra = first[0] - st.mean(first[1:])
    if warm and st.mean(d) > 10:
        check(f"{dut} warm-up", extra > 0.5 * st.mean(d),
              f"first iteration +{extra:.2f} s (published mean +{st.mean(d):.2f} s)")
    elif not warm:
        check(f"{dut} no warm-up", abs(extra) < 4 * st.stdev(first[1:]),
              f"first iteration {extra:+.2f} s, SD {st.stdev(first[1:]):.2f} s")

ab = {}
for r in rows(ref + "/androbench-sdhci-sprd.csv"):
    mode = "fua" if r["queue_fua"] == "1" else "cache-nofua"
    ab.setdefault((r["workload"], mode), []).append(float(r["mib_per_s"]))
for (met, mode), pub in sorted(ab.items()):
    got = sim.get(("sprd1", mode, "androbench", met))
    if not got or len(got) != n:
        check(f"sprd {met} {mode}", False, f"{len(got or [])} simulated iterations, want {n}")
        continue
    cvp, cvs = st.stdev(pub) / st.mean(pub), st.stdev(got) / st.mean(got)
    se = st.stdev(got) / math.sqrt(len(got))
    check(f"sprd {met} {mode} CV", 0.55 <= cvs / cvp <= 1.5,
          f"simulated {cvs:.4f} vs published {cvp:.4f} (x{cvs / cvp:.2f})")
    check(f"sprd {met} {mode} mean", abs(st.mean(got) - st.mean(pub)) <= 4 * se,
          f"simulated {st.mean(got):.2f} vs published {st.mean(pub):.2f} (4 SE {4 * se:.2f})")
    cells += 1
check("cells", cells == 20, f"{cells} published cells checked (12 ext4 copy, 8 AndroBench)")
sys.exit(1 if bad else 0)
PY
echo PASS
