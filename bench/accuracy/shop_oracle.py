#!/usr/bin/python3
"""bench/accuracy/shop_oracle.py: the Bayes floor of the shop's orders_30d.

    psql ... -d acc_shop -f shop_customers.sql > cust.csv   (run.sh: shop_customers.csv)
    shop_oracle.py cust.csv [PREDS.csv ...]

The MAE of the best possible prediction of orders_30d (shop_rows.sql) for a
model that knows how rt_demo_shop draws the orders before its cutoff
(sql/parts/15_demo.sql): a customer places N orders, N uniform on
0 .. M-1 (M = 14 vip, 10 business, 8 consumer), at times uniform on
[start, start + f * (cutoff - start)], start = max(signup, 2024-01-01),
cutoff 2024-10-01, f = 1/2 for the 25% who lapse, else 1.  Given the
orders seen before a row's obs_time it computes the posterior of the label
and predicts its median.  No model can be expected to reach it: it knows the
generator's constants, among them that the orders stop at the cutoff, so at
the test cutoff (2024-09-01) the label of a customer who has not lapsed is
exactly the orders still to come, which the training cutoffs (May-July,
windows ending two months or more before the cutoff) never show.  It says
how far the learned models are from the floor, per cutoff, and (with
PREDS.csv files, test_preds.sql's columns) where on the test rows they lose
to it: per group of segment x days since the last order, each method's
MAE.  If rt_demo_shop's order rules change, change the constants here.
"""
import collections
import csv
import datetime as dt
import math
import sys

import numpy as np

DAY = 86400.0
E = lambda s: dt.datetime.fromisoformat(s + "+00:00").timestamp()
CUTOFF, T_BEGIN = E("2024-10-01"), E("2024-01-01")
M = {"vip": 14, "business": 10, "consumer": 8}
LAPSE, LAPSE_F = 0.25, 0.5
CUTS = [("2024-05-01", "train"), ("2024-06-01", "train"), ("2024-07-01", "train"),
        ("2024-08-01", "val"), ("2024-09-01", "test")]


def posterior(seg, signup, times, c):
    """P(label = j), j = 0..19, for a customer observed at c (epoch s)."""
    start = max(signup, T_BEGIN)
    span = CUTOFF - start
    seen = [t for t in times if t < c]
    k = len(seen)
    dist = np.zeros(20)
    for f, pf in ((LAPSE_F, LAPSE), (1.0, 1 - LAPSE)):
        end = start + f * span
        if seen and max(seen) > end:
            continue                       # impossible under this f
        q = min(1.0, (c - start) / (f * span))          # P(an order falls before c)
        w = min(1.0, 30 * DAY / (end - c)) if end > c else 0.0   # P(a later one falls in the window)
        for n in range(k, M[seg]):
            if q >= 1.0 and n > k:
                break
            lik = math.comb(n, k) * (1 / (f * span)) ** k * ((1 - q) ** (n - k) if q < 1 else 1.0)
            p = pf / M[seg] * lik
            r = n - k
            for j in range(r + 1):
                dist[j] += p * math.comb(r, j) * w ** j * (1 - w) ** (r - j)
    return dist / dist.sum()


def main():
    cust = [(int(r[0]), r[1], float(r[2]), [float(x) for x in r[3].split()] if r[3] else [])
            for r in csv.reader(open(sys.argv[1]))]
    test = {}
    for cutoff, split in CUTS:
        c = E(cutoff)
        err = []
        for cid, seg, signup, times in cust:
            if signup >= c or (split == "test" and cid % 5 != 4):
                continue
            med = int(np.searchsorted(np.cumsum(posterior(seg, signup, times, c)), 0.5))
            y = sum(1 for t in times if c <= t < c + 30 * DAY)
            err.append(abs(y - med))
            if split == "test":
                seen = [t for t in times if t < c]
                last = (c - max(seen)) / DAY if seen else None
                rec = "none" if last is None else "<30" if last < 30 else "<90" if last < 90 else ">=90"
                test[str(cid)] = (y, med, (seg, rec))
        print(f"{cutoff} {split:5s} {len(err):6d} rows: oracle MAE {np.mean(err):.4f}")
    preds = collections.defaultdict(dict)          # (method, seed, file) -> customer -> prediction
    for fi, path in enumerate(sys.argv[2:]):
        for r in csv.DictReader(open(path)):
            if r["task"].endswith("orders_30d"):
                preds[(r["method"], r["seed"], fi + 1)][r["customer_id"]] = float(r["pred"])
    if not preds:
        return
    names = sorted(preds)
    print("test rows by segment x days since the last order: n, label mean, MAE of the oracle and of "
          + ", ".join(f"{m} seed {s} (file {fi})" for m, s, fi in names))
    groups = collections.defaultdict(list)
    for cid, (y, med, g) in test.items():
        if all(cid in preds[n] for n in names):
            groups[g].append((y, med) + tuple(preds[n][cid] for n in names))
    for g in sorted(groups):
        a = np.array(groups[g])
        maes = " ".join(f"{np.abs(a[:, 0] - a[:, i]).mean():.3f}" for i in range(1, a.shape[1]))
        print(f"  {g[0]:9s} {g[1]:5s} {len(a):5d} {a[:, 0].mean():.3f}  {maes}")


if __name__ == "__main__":
    main()
