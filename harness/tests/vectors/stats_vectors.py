#!/usr/bin/env python3
"""Independent reference values for harness/tests/unit/test_stats.c.

Run once (python3, standard library only) and paste the printed numbers into
the C test.  Nothing here shares code or method with harness/lib/stats.c:
  - mean/sd/median from python's statistics module;
  - Student t tail probabilities by numerical integration of the t density
    (Simpson's rule on the substitution x = t/s), quantiles by bisection on it;
  - I_x(a, b) for integer a, b from the binomial identity;
  - Mann-Whitney U p-values by brute-force enumeration of every split of the
    pooled mid-ranks (itertools.combinations), or the textbook normal
    approximation with tie and continuity correction for large samples.
"""
import csv
import itertools
import math
import os
import statistics as st

HERE = os.path.dirname(os.path.abspath(__file__))
REF = os.environ.get("REFDATA", "/work/shared/reference-data")


def t_pdf(x, df):
    c = math.exp(math.lgamma((df + 1) / 2) - math.lgamma(df / 2)) / math.sqrt(df * math.pi)
    return c * (1 + x * x / df) ** (-(df + 1) / 2)


def t_upper(t, df, n=20000):
    """P(T > t) for t >= 0: integral of the density from t to infinity."""
    if t == 0:
        return 0.5
    # x = t/s, s in (0, 1]; dx = t/s^2 ds
    def g(s):
        if s == 0:
            return 0.0 if df > 1 else t_pdf_limit(t, df)
        return t_pdf(t / s, df) * t / (s * s)

    def t_pdf_limit(t_, df_):  # df == 1: f(t/s) t/s^2 -> t/(pi t^2) as s -> 0
        return 1.0 / (math.pi * t_)
    h = 1.0 / n
    acc = g(0) + g(1)
    for i in range(1, n):
        acc += (4 if i % 2 else 2) * g(i * h)
    return acc * h / 3


def t_cdf(t, df):
    return 1 - t_upper(t, df) if t >= 0 else t_upper(-t, df)


def t_quant(p, df):
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def betainc_int(a, b, x):
    n = a + b - 1
    return sum(math.comb(n, j) * x ** j * (1 - x) ** (n - j) for j in range(a, n + 1))


def describe(xs):
    n = len(xs)
    m = st.mean(xs)
    sd = st.stdev(xs)
    q = t_quant(0.975, n - 1)
    return dict(n=n, mean=m, sd=sd, median=st.median(xs), ci=q * sd / math.sqrt(n))


def welch(a, b):
    va, vb = st.variance(a) / len(a), st.variance(b) / len(b)
    t = (st.mean(b) - st.mean(a)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    p = 2 * t_upper(abs(t), df)
    return t, df, p


def change_ci(a, b):
    ma, mb = st.mean(a), st.mean(b)
    ra = st.variance(a) / (len(a) * ma * ma)
    rb = st.variance(b) / (len(b) * mb * mb)
    R = mb / ma
    se = R * math.sqrt(ra + rb)
    df = (ra + rb) ** 2 / (ra ** 2 / (len(a) - 1) + rb ** 2 / (len(b) - 1))
    q = t_quant(0.975, df)
    return R - 1, R - q * se - 1, R + q * se - 1


def midranks(vals):
    order = sorted(vals)
    r = {}
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and order[j + 1] == order[i]:
            j += 1
        r[order[i]] = (i + j + 2) / 2
        i = j + 1
    return [r[v] for v in vals]


def mwu_exact(a, b):
    ranks = midranks(list(a) + list(b))
    na = len(a)
    w = sum(ranks[:na])
    le = ge = tot = 0
    for comb in itertools.combinations(ranks, na):
        s = sum(comb)
        tot += 1
        le += s <= w + 1e-9
        ge += s >= w - 1e-9
    u = w - na * (na + 1) / 2
    return u, min(1.0, 2 * min(le, ge) / tot)


def mwu_normal(a, b):
    allv = list(a) + list(b)
    ranks = midranks(allv)
    na, nb, n = len(a), len(b), len(allv)
    u = sum(ranks[:na]) - na * (na + 1) / 2
    ties = sum(allv.count(v) ** 3 - allv.count(v) for v in set(allv))
    var = na * nb / 12 * ((n + 1) - ties / (n * (n - 1)))
    z = max(0.0, abs(u - na * nb / 2) - 0.5) / math.sqrt(var)
    return u, min(1.0, math.erfc(z / math.sqrt(2)))


def load_groups():
    g = {}
    with open(os.path.join(REF, "androbench-sdhci-sprd.csv")) as f:
        for row in csv.DictReader(l for l in f if not l.startswith("#")):
            mode = "fua" if row["queue_fua"] == "1" else "cache-nofua"
            g.setdefault(("sprd", row["workload"], mode), []).append(float(row["mib_per_s"]))
    with open(os.path.join(REF, "fs-copy-benchmark.csv")) as f:
        for row in csv.DictReader(l for l in f if not l.startswith("#")):
            g.setdefault((row["dut"], "wall_time", row["mode"]), []).append(float(row["seconds"]))
    return g


def warmup(xs, direction):
    rest = xs[1:]
    med = st.median(rest)
    mad = 1.4826 * st.median([abs(v - med) for v in rest])
    worse = (med - xs[0]) if direction > 0 else (xs[0] - med)
    return worse > 0.02 * abs(med) and worse > 3 * mad, (xs[0] - med) / abs(med)


def main():
    print("/* t quantiles (p, df, q) */")
    for p, df in [(0.975, 1), (0.975, 2), (0.975, 4), (0.975, 7.5), (0.95, 10), (0.995, 30), (0.025, 4)]:
        q = t_quant(p, df) if p > 0.5 else -t_quant(1 - p, df)
        print("{%g, %g, %.12g}," % (p, df, q))
    print("/* t cdf (t, df, cdf) */")
    for t, df in [(1.0, 3), (-2.5, 6), (4.2, 2.7), (12.0, 4.1)]:
        print("{%g, %g, %.12g}," % (t, df, t_cdf(t, df)))
    print("/* betainc (a, b, x, I) */")
    for a, b, x in [(2, 3, 0.4), (5, 1, 0.9), (3, 7, 0.05), (10, 10, 0.5)]:
        print("{%d, %d, %g, %.15g}," % (a, b, x, betainc_int(a, b, x)))
    g = load_groups()
    print("/* describe: key, n, mean, sd, median, ci_half(95%) */")
    for k in sorted(g):
        d = describe(g[k])
        print('{"%s", "%s", "%s", %d, %.12g, %.12g, %.12g, %.12g},' % (k + (d["n"], d["mean"], d["sd"], d["median"], d["ci"])))
    print("/* compare b vs a: part, metric, a mode, b mode, change, lo, hi, t, df, p_welch, U, p_mwu */")
    pairs = [(p, m, "fua", "cache-nofua") for (p, m, mo) in g if mo == "fua"]
    pairs += [("DUT5", "wall_time", "fua-cqe", "cache-nofua-cqe"), ("DUT5", "wall_time", "fua", "fua-cqe")]
    for (p, m, a, b) in sorted(set(pairs)):
        A, B = g[(p, m, a)], g[(p, m, b)]
        ch, lo, hi = change_ci(A, B)
        t, df, pw = welch(A, B)
        u, pm = mwu_exact(A, B)
        print('{"%s", "%s", "%s", "%s", %.12g, %.12g, %.12g, %.12g, %.12g, %.12g, %g, %.12g},' % (p, m, a, b, ch, lo, hi, t, df, pw, u, pm))
    print("/* MWU with ties, exact */")
    a, b = [1, 2, 2, 3, 5], [2, 3, 3, 4, 6, 7]
    print("ties exact U=%g p=%.12g" % mwu_exact(a, b))
    a2 = [float(i % 7) + 0.5 * (i % 3) for i in range(25)]
    b2 = [float(i % 5) + 1.0 + 0.25 * (i % 4) for i in range(23)]
    print("a2=", a2)
    print("b2=", b2)
    print("normal U=%g p=%.12g" % mwu_normal(a2, b2))
    print("/* warm-up (key, flagged, dev) */")
    for k in sorted(g):
        direction = -1 if k[1] == "wall_time" else 1
        f, dev = warmup(g[k], direction)
        print('{"%s", "%s", "%s", %d, %.12g},' % (k + (int(f), dev)))


if __name__ == "__main__":
    main()
