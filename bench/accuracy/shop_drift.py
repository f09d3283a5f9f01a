#!/usr/bin/python3
"""bench/accuracy/shop_drift.py: is the shop's orders_30d test month like its training months?

    shop_drift.py cust.csv [PREDS.csv ...]

cust.csv as shop_oracle.py makes it (every customer's segment, signup and
order times before rt_demo_shop's cutoff).  For the customers who ordered in
the last 90 days before a cutoff -- the rows on which the models differ; the
others are predicted 0 by every method -- grouped by segment, days since the
last order (< 30, 30-90) and orders so far (1-3, 4-6, 7-9, 10+), it prints
per cutoff of shop_rows.sql (May, June, July train, August val, September
test) the share of rows with a label >= 1 beside what shop_oracle.py's
posterior expects (its mean P(label >= 1)).  rt_demo_shop places a
customer's N orders uniformly before its cutoff (2024-10-01), so a customer
with orders left must place them in the time left, and the share rises as
the cutoffs near it; a learned model sees only the train months.

With PREDS.csv files (test_preds.sql's columns, any mix of methods and
seeds), it adds per group each method's share of test rows predicted >= 1,
its MAE averaged over its files, and what the group adds to the gap between
the first method and the others (MAE difference x rows / all test rows).
"""
import collections
import csv
import sys

import numpy as np

from shop_oracle import CUTS, DAY, E, posterior

N_BINS = ((1, 3), (4, 6), (7, 9), (10, 99))


def group(seg, times, c):
    seen = [t for t in times if t < c]
    if not seen:
        return None
    last = (c - max(seen)) / DAY
    if last >= 90:
        return None
    n = next(f"{lo}-{hi}" if hi < 99 else f"{lo}+" for lo, hi in N_BINS if lo <= len(seen) <= hi)
    return (seg, "<30" if last < 30 else "30-90", n)


def main():
    cust = [(int(r[0]), r[1], float(r[2]), [float(x) for x in r[3].split()] if r[3] else [])
            for r in csv.reader(open(sys.argv[1]))]
    share = collections.defaultdict(lambda: collections.defaultdict(list))  # group -> cutoff -> [(y>=1, P)]
    test = {}                                                                 # customer -> (label, group)
    for cutoff, split in CUTS:
        c = E(cutoff)
        for cid, seg, signup, times in cust:
            if signup >= c or (split == "test" and cid % 5 != 4):
                continue
            g = group(seg, times, c)
            if g is None:
                continue
            y = sum(1 for t in times if c <= t < c + 30 * DAY)
            share[g][cutoff].append((y >= 1, 1.0 - posterior(seg, signup, times, c)[0]))
            if split == "test":
                test[str(cid)] = (y, g)
    preds = collections.defaultdict(lambda: collections.defaultdict(dict))   # method -> file -> customer -> pred
    for fi, path in enumerate(sys.argv[2:]):
        for r in csv.DictReader(open(path)):
            if r["task"].endswith("orders_30d"):
                preds[r["method"]][(fi, r["seed"])][r["customer_id"]] = float(r["pred"])
    methods = list(preds)
    n_test = max((len(f) for m in methods for f in preds[m].values()), default=0)
    cuts = [c for c, _ in CUTS]
    print("share of rows with a label >= 1 (the oracle's expected share) per cutoff: " + ", ".join(
        f"{c[5:7]} {s}" for c, s in CUTS))
    if methods:
        print(f"then on the test rows, per method (files): share predicted >= 1, MAE; "
              f"and the group's part of the gap {methods[0]} - other (MAE x rows / {n_test})")
    gap = collections.Counter()
    for g in sorted(share):
        cells = []
        for c in cuts:
            a = np.array(share[g][c])                                     # [rows, 2]
            cells.append(f"{len(a):5d} {a[:, 0].mean():.2f} ({a[:, 1].mean():.2f})" if len(a) else f"{0:5d}   -        ")
        line = f"{g[0]:9s} {g[1]:5s} {g[2]:5s} " + " |".join(cells)
        ids = [cid for cid, (_, tg) in test.items() if tg == g]
        y = np.array([test[cid][0] for cid in ids], dtype=float)
        mae = {}
        for m in methods:
            files = [f for f in preds[m].values() if all(cid in f for cid in ids)]
            if not files or not ids:
                continue
            p = np.array([[f[cid] for cid in ids] for f in files])        # [files, rows]
            mae[m] = np.abs(p - y).mean()
            line += f" | {m} {(p >= 0.5).mean():.2f} {mae[m]:.3f}"
        for m in methods[1:]:
            if methods[0] in mae and m in mae:
                gap[m] += (mae[methods[0]] - mae[m]) * len(ids) / n_test
        print(line)
    for m in methods[1:]:
        print(f"{methods[0]} - {m}: {gap[m]:+.4f} MAE from these groups")


if __name__ == "__main__":
    main()
