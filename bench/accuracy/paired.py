#!/usr/bin/python3
"""bench/accuracy/paired.py: headwater against the GBDT on the same test rows,
with the uncertainty of a finite test set.

    /usr/bin/python3 bench/accuracy/paired.py [--methods A,B] [LABEL=]PREDS.csv...

--methods A,B compares method A against method B (default headwater,GBDT);
LABEL=PREDS.csv reads that file's rows as method LABEL whatever its method
column says: two headwater runs side by side, e.g.
    paired.py --methods new,old new=run2/preds_hw_1.csv old=run1/preds_hw_1.csv

PREDS.csv: test_preds.sql's (headwater, one file per database and seed) and
gbdt.py's (all seeds): method, seed, task, a row key (customer_id, or
another name: the fourth column), label, pred.  For
each task: each method's test metric per seed and its mean over seeds (the
figures of report.md), the difference of the two means (positive = headwater
better: AUROC higher, MAE lower), and a 95% interval for that difference by
the paired bootstrap over test rows (2,000 resamples of the rows, the same
resample for every method and seed): how much of the difference a test set
of this size could show by chance.  The interval does not cover the
variation between training seeds (the per-seed figures show it).
"""
import csv
import sys
from collections import defaultdict

import numpy as np

N_BOOT = 2000


def auroc_rows(y, p, idx):
    """AUROC of each resample (rows idx[b]) with average ranks for ties.
    y: [n] bool, p: [n], idx: [nb, n] -> [nb]."""
    ys, ps = y[idx], p[idx]                                   # [nb, n]
    order = np.argsort(ps, axis=1, kind="mergesort")
    sp = np.take_along_axis(ps, order, axis=1)
    ranks = np.empty_like(sp)
    n = sp.shape[1]
    for b in range(sp.shape[0]):                              # average ranks of ties
        r = np.arange(1, n + 1, dtype=float)
        _, start, count = np.unique(sp[b], return_index=True, return_counts=True)
        for s, c in zip(start, count):
            if c > 1:
                r[s:s + c] = s + (c + 1) / 2.0
        ranks[b] = r
    ysorted = np.take_along_axis(ys, order, axis=1)
    npos = ysorted.sum(axis=1)
    nneg = n - npos
    return ((ranks * ysorted).sum(axis=1) - npos * (npos + 1) / 2.0) / (npos * nneg)


def main():
    args = sys.argv[1:]
    first, second = "headwater", "GBDT"
    if args[:1] == ["--methods"]:
        first, second = args[1].split(",")
        args = args[2:]
    data = defaultdict(dict)            # task -> (method, seed) -> {row key: (label, pred)}
    for arg in args:
        label, eq, path = arg.partition("=")
        if not eq or "/" in label:          # a plain path (which may hold '=')
            label, path = "", arg
        with open(path) as f:
            reader = csv.DictReader(f)
            key = reader.fieldnames[3]      # customer_id, or football's row_key
            for r in reader:
                data[r["task"]].setdefault((label or r["method"], int(r["seed"])), {})[r[key]] = \
                    (float(r["label"]), float(r["pred"]))
    rng = np.random.default_rng(7)
    for task in sorted(data):
        runs = data[task]
        methods = sorted({m for m, _ in runs})
        if not {first, second} <= set(methods):
            print(f"== {task}: needs both {first} and {second} predictions (has {methods})")
            continue
        ids = sorted(set.intersection(*(set(v) for v in runs.values())))
        n = len(ids)
        y = np.array([runs[next(iter(runs))][i][0] for i in ids])
        cls = set(np.unique(y)) <= {0.0, 1.0}
        name = "auroc" if cls else "mae"
        idx = np.vstack([np.arange(n), rng.integers(0, n, size=(N_BOOT, n))])   # row 0: the test set itself
        mean = {}
        print(f"== {task}: test {name} on {n} rows shared by every run ({'higher' if cls else 'lower'} is better)")
        for m in (first, second):
            per_seed = []
            for (mm, seed), v in sorted(runs.items()):
                if mm != m:
                    continue
                p = np.array([v[i][1] for i in ids])
                vals = auroc_rows(y > 0.5, p, idx) if cls else np.abs(y[idx] - p[idx]).mean(axis=1)
                per_seed.append((seed, vals))
            mean[m] = np.mean([v for _, v in per_seed], axis=0)     # [1 + N_BOOT]
            print(f"  {m:10s} {mean[m][0]:.4f}  (seeds {', '.join(f'{s}: {v[0]:.4f}' for s, v in per_seed)})")
        diff = (mean[first] - mean[second]) * (1 if cls else -1)
        lo, hi = np.percentile(diff[1:], [2.5, 97.5])
        print(f"  {first} better by {diff[0]:+.4f} (95% paired-bootstrap interval {lo:+.4f} .. {hi:+.4f}; "
              f"{first} at least as good in {100 * np.mean(diff[1:] >= 0):.0f}% of resamples)")


if __name__ == "__main__":
    main()
