#!/usr/bin/python3
"""sim_fit.py - fit the simulator's timing model to the published samples.

Prints, from results/reference/*.csv, the figures boards/sim/sim_model.c and
harness/common/sim_calib.c compile in: per ext4-copy DUT the steady-state
means solved into base/rel (the flush cost per part is a choice, FLUSH_MS),
the CQE gain of DUT5, and per DUT x mode (and sprd AndroBench metric x mode)
the spread, the warm-up and the sample skewness.  Standard library only.

    bench/sim_fit.py [REFDIR]        # default: results/reference next to bench/
"""
import csv
import math
import os
import statistics as st
import sys

# The per-commit flush cost of each part is not separable from base time in
# the published wall times: chosen (2-6.5 ms, docs/simulator.md), an assumption.
FLUSH_MS = {"DUT1": 5.0, "DUT2": 3.0, "DUT3": 2.0, "DUT4": 2.5, "DUT5": 6.5}
COMMITS = 461  # reliable writes per FUA iteration, published for DUT5
PNM = {"DUT1": (0x88, "NCard"), "DUT2": (0x9f, "SG016"), "DUT3": (0x15, "8GTF4R"),
       "DUT4": (0x15, "AJTD4R"), "DUT5": (0x13, "Q2J55L")}


def skew(x):
    m, s = st.mean(x), st.pstdev(x)
    return sum((v - m) ** 3 for v in x) / len(x) / s ** 3 if s > 0 else 0.0


def skew_se(n):  # standard error of the sample skewness of a normal sample
    return math.sqrt(6.0 * n * (n - 1) / ((n - 2) * (n + 1) * (n + 3)))


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def fit_fscopy(path):
    series = {}
    for r in rows(path):
        series.setdefault(r["dut"], {}).setdefault(r["mode"], []).append(
            (int(r["run"]), float(r["seconds"])))
    out = {}
    for dut, modes in sorted(series.items()):
        x = {m: [v for _, v in sorted(s)] for m, s in modes.items()}
        d = [v[0] - st.mean(v[1:]) for v in x.values()]
        # A warm-up where every series' first iteration is the slower one.
        warm = all(v > 0 for v in d)
        steady = {m: (v[1:] if warm else v) for m, v in x.items()}
        s2 = st.mean([st.variance(v) for v in steady.values()])
        wmean = st.mean(d) if warm else 0.0
        wsd = math.sqrt(max(0.0, st.variance(d) - 1.25 * s2)) if warm and len(d) > 1 else 0.0
        out[dut] = {"modes": x, "steady": steady, "warm": warm, "wmean": wmean, "wsd": wsd, "d": d}
    return out


def fit_androbench(path):
    cells = {}
    for r in rows(path):
        mode = "fua" if r["queue_fua"] == "1" else "cache-nofua"
        cells.setdefault((r["workload"], mode), []).append(float(r["mib_per_s"]))
    return cells


def main():
    ref = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "results", "reference")
    fs = fit_fscopy(os.path.join(ref, "fs-copy-benchmark.csv"))
    ab = fit_androbench(os.path.join(ref, "androbench-sdhci-sprd.csv"))
    print("# ext4 copy (fs-copy-benchmark.csv): steady means -> model constants")
    for dut, f in fs.items():
        mean = {m: st.mean(v) for m, v in f["steady"].items()}
        fl = FLUSH_MS[dut]
        base = mean["cache-nofua"] - COMMITS * fl / 1000
        rel = (mean["fua"] - base) * 1000 / COMMITS
        line = f"{dut}: base_s {base:.3f} flush_ms {fl} (chosen) rel_ms {rel:.3f}"
        if "fua-cqe" in mean:
            bq = mean["cache-nofua-cqe"] - COMMITS * fl / 1000
            line += f" cqe_gain {1 - bq / base:.5f} cqe_rel_ms {(mean['fua-cqe'] - bq) * 1000 / COMMITS:.3f}"
        print(line)
        print(f"  warm-up per series {[round(v, 2) for v in f['d']]}: "
              + (f"mean {f['wmean']:.2f} s, SD {f['wsd']:.2f} s" if f["warm"] else "none (a first iteration is not the slower)"))
        for m, v in f["steady"].items():
            print(f"  {m}: n {len(v)} mean {st.mean(v):.3f} SD {st.stdev(v):.3f} skew {skew(v):+.2f} (SE {skew_se(len(v)):.2f})")
    print("# AndroBench on sdhci-sprd (androbench-sdhci-sprd.csv): per metric and mode")
    for (met, m), v in sorted(ab.items()):
        print(f"  {met} {m}: n {len(v)} mean {st.mean(v):.3f} CV {st.stdev(v) / st.mean(v):.5f}"
              f" skew {skew(v):+.2f} (SE {skew_se(len(v)):.2f})")
    print("# sim_calib_noise_table rows (harness/common/sim_calib.c)")
    for dut, f in fs.items():
        mid, pnm = PNM[dut]
        runs = "runs 2-5" if f["warm"] else "runs 1-5"
        for m, v in f["steady"].items():
            print(f'    {{0x{mid:02x}, "{pnm}", "fscopy", "wall_time", "{m}", {st.stdev(v):.3f}, '
                  f'{f["wmean"]:.2f}, {f["wsd"]:.2f}, true, FS_REF " {dut} {m} {runs}"}},')
    for (met, m), v in sorted(ab.items()):
        print(f'    {{0x15, "BJTD4R", "androbench", "{met}", "{m}", {st.stdev(v) / st.mean(v):.5f}, 0, 0, true, '
              f'AB_REF " queue_fua={1 if m == "fua" else 0} {met}"}},')


if __name__ == "__main__":
    main()
