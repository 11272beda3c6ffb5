#!/bin/bash
# virt_latency.sh - per-request latency on the virtual board (docs/agent.md
# "Request latency"): QEMU (TCG) boots Debian's 6.1 kernel with the patched
# mmc modules and vemmc; the controller runs androbench in fua and
# cache-nofua; the agent traces block_rq_issue/complete on the guest kernel.
# Asserted: every iteration stored the write and flush percentiles (plausible:
# non-zero, ordered p50 <= p90 <= p99 <= p99.9, in the range of a vemmc
# request), the histogram counters add up to requests, and the run's HTML
# report has one CDF chart with a write and a flush curve per mode.
# Pinned to 6.1 (virt_nightly and virt_powerfail also run on 6.12): the
# patched modules and vemmc are built for the kernel the board boots.
set -euo pipefail
. "${EMMCLAB_SRC:-$(cd "$(dirname "$0")/../../.." && pwd)}/harness/tests/helpers/virtlib.sh"

kver=$(ls /boot/vmlinuz-6.1.* 2> /dev/null | sed 's|.*/vmlinuz-||' | sort -V | tail -1)
[ -n "$kver" ] || { echo "SKIP: not installed: linux-image-6.1 (/boot/vmlinuz-6.1.*)"; exit 77; }
kernel=/boot/vmlinuz-$kver

tmp=$(mktemp -d)
cleanup() { rm -rf "$tmp"; }
trap cleanup EXIT

mods=$("$SRC/boards/kernel/build-modules.sh" --kver "$kver" | tail -1)
"$SRC/boards/virt/mkinitramfs.sh" --agent "$AGENT" --modules "$mods" --kver "$kver" \
	--out "$tmp/initramfs.cpio.gz" > /dev/null

# The board type with more time for the first console byte: with "quiet" the
# first byte comes late, and on a loaded 2-core host TCG took over 30 s.
sed 's/first_output: 30s/first_output: 3m/' "$SRC/boards/types/qemu-vemmc.yaml" > "$tmp/qemu-vemmc.yaml"
grep -q 'first_output: 3m' "$tmp/qemu-vemmc.yaml" || fail "no first_output in the qemu-vemmc type"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
cat > "$tmp/lab.yaml" <<EOT
include:
  - $tmp/qemu-vemmc.yaml
lab:
  name: virt-latency
  results: $tmp/lab.db
  transcripts: $tmp/transcripts
kernels:
  - name: debian-$kver-vemmc
    image: $kernel
    initrd: $tmp/initramfs.cpio.gz
    cmdline: "quiet loglevel=4"
defaults:
  enabled: true
boards:
  - name: slow
    type: qemu-vemmc
    part: {label: "vemmc slowrel", model: slowrel}
    console: {driver: tcp, host: 127.0.0.1, port: $port, reconnect_delay: 200ms}
    power: {driver: qemu, port: $port, dir: "$tmp/qemu", append: "vemmc.profile=slowrel", off_time: 100ms}
    deploy: {driver: qemu, dir: "$tmp/qemu"}
EOT
cat > "$tmp/plan.yaml" <<EOT
suite:
  name: virt-latency
  modes: [fua, cache-nofua]
  iterations: 2
  reboot_between_modes: true
  order: sequential
  seed: 1
  precondition_passes: 0
  exclude_warmup: false
  workloads:
    - name: androbench
      args: {seq_mib: 4, req_mib: 1, rand_mib: 4, rand_ios: 128, count: 1}
plan:
  name: virt-latency
  lab: lab.yaml
  suites: [virt-latency]
  budget: 20m
  results: lab.db
EOT
"$EMMCLAB" check "$tmp/plan.yaml" > /dev/null

t0=$(date +%s)
timeout 840 "$EMMCLAB" run --db "$tmp/lab.db" --no-upload --report "$tmp/report.html" \
	--transcripts "$tmp/transcripts" "$tmp/plan.yaml" > "$tmp/run.log" 2>&1 \
	|| { tail -30 "$tmp/run.log"; fail "emmclab run failed"; }
echo "virt latency run: $(( $(date +%s) - t0 )) s"
! pgrep -f "port=$port,server=on" > /dev/null || fail "QEMU still running after the run"

q() { sqlite3 "$tmp/lab.db" "$1"; }
[ "$(q "select count(*) from job where status='ok' and verified_mode=mode")" = 2 ] \
	|| { q "select mode, verified_mode, status from job"; fail "not 2 verified ok jobs"; }
[ "$(q "select source from run")" = virtual ] || fail "run source: $(q "select source from run")"
for m in fua cache-nofua; do
	for op in write flush; do
		for it in 1 2; do
			v=$(q "select group_concat(s.value, ' ') from (select s.value from job j
			       join iteration i on i.job_id=j.id join sample s on s.iteration_id=i.id
			       where j.mode='$m' and i.n=$it and s.metric in ('rq_${op}_lat_p50_us',
			       'rq_${op}_lat_p90_us', 'rq_${op}_lat_p99_us', 'rq_${op}_lat_p999_us')
			       order by case s.metric when 'rq_${op}_lat_p50_us' then 1
			       when 'rq_${op}_lat_p90_us' then 2 when 'rq_${op}_lat_p99_us' then 3 else 4 end) s")
			# vemmc under TCG: a request takes tens of us to hundreds of ms
			echo "$v" | awk -v w="$m $op iter $it" '{
				if (NF != 4) { print "FAIL: " w ": percentiles: " $0; exit 1 }
				for (i = 1; i <= 4; i++) if ($i < 5 || $i > 2e6) { print "FAIL: " w ": implausible " $0; exit 1 }
				if (!($1 <= $2 && $2 <= $3 && $3 <= $4)) { print "FAIL: " w ": not ordered " $0; exit 1 } }' \
				|| exit 1
			n=$(q "select sum(c.value) from job j join iteration i on i.job_id=j.id
			       join counter c on c.iteration_id=i.id
			       where j.mode='$m' and i.n=$it and c.name like 'rq_${op}_lat_b%'")
			# androbench's 128 O_DSYNC random writes are one write request each (more with
			# the sequential part); without FUA each is followed by a flush request, with
			# FUA only the sequential part's fdatasync flushes
			want=128
			[ "$m $op" != "fua flush" ] || want=1
			[ -n "$n" ] && [ "$n" -ge $want ] || fail "$m $op iter $it: $n requests in the histogram, want >= $want"
			eval "n_${m//-/_}_$op=\$(( \${n_${m//-/_}_$op:-0} + n ))"
		done
	done
	echo "$m: write p99 $(q "select group_concat(s.value, ', ') from job j join iteration i on i.job_id=j.id
		join sample s on s.iteration_id=i.id where j.mode='$m' and s.metric='rq_write_lat_p99_us'") us," \
		"flush p99 $(q "select group_concat(s.value, ', ') from job j join iteration i on i.job_id=j.id
		join sample s on s.iteration_id=i.id where j.mode='$m' and s.metric='rq_flush_lat_p99_us'") us"
done

# the mode shows in the requests: FUA writes need no flush request, cache-nofua one per write
[ $((n_fua_flush * 10)) -lt "$n_cache_nofua_flush" ] \
	|| fail "flush requests: fua $n_fua_flush, cache-nofua $n_cache_nofua_flush (want far fewer with FUA)"

# The HTML report of the run: one CDF chart for the part's androbench, a write
# and a flush curve per mode with the stored requests and non-zero percentiles.
python3 - "$tmp/report.html" <<'PY' || fail "HTML latency CDFs"
import re, sys
h = open(sys.argv[1]).read()
assert "<h2>Request latency</h2>" in h, "no latency section"
assert "<script" not in h.lower(), "a script in the report"
charts = re.findall(r"<svg class='plot cdf' data-part='([^']*)' data-workload='([^']*)' "
                    r"data-source='([^']*)'.*?</svg>", h, re.S)
assert [(p, w, s) for p, w, s in charts] == [("vemmc slowrel", "androbench", "virtual")], charts
svg = re.search(r"<svg class='plot cdf'.*?</svg>", h, re.S).group(0)
curves = re.findall(r"<polyline class='cdf-curve'[^>]*data-mode='([^']*)' data-op='([^']*)' "
                    r"data-n='(\d+)' data-p50-us='([^']*)' data-p99-us='([^']*)' "
                    r"data-p999-us='([^']*)' points='([^']*)'", svg)
got = sorted((c[0], c[1]) for c in curves)
assert got == [("cache-nofua", "flush"), ("cache-nofua", "write"), ("fua", "flush"), ("fua", "write")], got
for mode, op, n, p50, p99, p999, pts in curves:
    assert int(n) >= (1 if (mode, op) == ("fua", "flush") else 256), (mode, op, n)
    assert 0 < float(p50) <= float(p99) <= float(p999), (mode, op, p50, p99, p999)
    ys = [float(p.split(",")[1]) for p in pts.split()]
    assert ys[0] == 170.0 and abs(ys[-1] - 10.0) < 0.05, (mode, op, ys[:2], ys[-1:])
    assert all(a >= b for a, b in zip(ys, ys[1:])), "a CDF that goes down"
print("html: %d CDF curves, p99 %s" % (len(curves), ", ".join("%s %s %s us" % (c[0], c[1], c[4]) for c in curves)))
PY
echo "PASS: virt latency (2 modes, percentiles and histograms per iteration, CDFs in the HTML report)"
