#!/usr/bin/python3
"""sim_study.py - published comparisons against the simulated lab over seeds.

    sim_study.py PUBLISHED.json SEED.json...

Each file is `emmclab compare --format json` (schema emmclab-compare/1): the
first on the imported published data, the others one per simulated seed.  For
every published comparison (part, workload, metric, pair) it prints the
published change and Welch p-value, the 2.5/50/97.5 percentiles of the
simulated ones (linear interpolation over the seeds), whether each published
value lies inside that central 95 %, and the rate at which the simulated
verdict (better / worse / no difference) differs from the published one.
Parts are matched by their DUT number (DUT1..DUT5) or as the sdhci-sprd
board.  Exit 0 when every published value lies inside, 1 otherwise, 2 when a
file is not a compare document or a published comparison has no simulated
counterpart.  Standard library only.
"""
import json
import sys


def part_key(part):
    p = part.strip()
    if p.startswith("DUT") and len(p) > 3 and p[3].isdigit():
        return p[:4]
    if "sprd" in p.lower():
        return "sprd"
    return p


def load(path):
    with open(path) as f:
        d = json.load(f)
    if d.get("schema") != "emmclab-compare/1":
        sys.exit(f"sim_study: {path}: not an emmclab-compare/1 document")
    out = {}
    for c in d["comparisons"]:
        key = (part_key(c["part"]), c["workload"], c["metric"], c["a"]["label"], c["b"]["label"])
        out[key] = c
    return out


def pct(xs, q):
    xs = sorted(xs)
    k = (len(xs) - 1) * q
    f = int(k)
    c = min(f + 1, len(xs) - 1)
    return xs[f] + (xs[c] - xs[f]) * (k - f)


def verdict(c):
    v = c["verdict"]
    return v if v in ("better", "worse") else "none"


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    pub = load(sys.argv[1])
    sims = [load(p) for p in sys.argv[2:]]
    n = len(sims)
    print(f"published comparisons vs the simulated lab over {n} seed(s); change in %, p: Welch")
    print(f"{'part':5} {'workload/metric':22} {'b vs a':31} {'pub change':>10} {'sim 2.5/50/97.5 %':>26} in"
          f" {'pub p':>8} {'sim p 2.5/50/97.5':>28} in  {'pub verdict':11} disagree")
    allin = True
    for key in sorted(pub):
        part, wl, met, a, b = key
        pc = pub[key]
        got = [s[key] for s in sims if key in s]
        if len(got) != n:
            print(f"sim_study: {part} {wl}/{met} {b} vs {a}: in {len(got)} of {n} seeds only", file=sys.stderr)
            sys.exit(2)
        ch = [100 * c["change"] for c in got]
        ps = [c["p_welch"] for c in got]
        lo, md, hi = pct(ch, 0.025), pct(ch, 0.5), pct(ch, 0.975)
        plo, pmd, phi = pct(ps, 0.025), pct(ps, 0.5), pct(ps, 0.975)
        pch, pp = 100 * pc["change"], pc["p_welch"]
        cin = lo <= pch <= hi
        pin = plo <= pp <= phi
        allin &= cin and pin
        dis = sum(verdict(c) != verdict(pc) for c in got)
        print(f"{part:5} {wl + '/' + met:22} {b + ' vs ' + a:31} {pch:+9.2f}% "
              f"{lo:+8.2f} {md:+8.2f} {hi:+8.2f} {'yes' if cin else 'NO ':3}"
              f" {pp:8.3g} {plo:9.3g} {pmd:9.3g} {phi:9.3g} {'yes' if pin else 'NO ':3} "
              f"{verdict(pc):11} {dis}/{n} ({100.0 * dis / n:.0f}%)")
    print("every published change and p-value inside the simulated central 95%:",
          "yes" if allin else "NO")
    return 0 if allin else 1


if __name__ == "__main__":
    sys.exit(main())
