#!/usr/bin/python3
"""bench/accuracy/threshold_study.py: would a rounding threshold chosen on
validation beat rounding at 1/2?

A task with integer labels serves round(u), u the network's value before
rounding (the dump's unrounded column).  Under MAE the best integer for a row
is the median of its label, so u should cross k + 1/2 where P(label > k)
crosses 1/2; a network trained with a smooth loss may rank the rows well and
still cross at another value.  For every candidate (checkpoint, weights) of
each numerical task this picks theta in 0.002 .. 0.048 (step 0.002) and 0.05 .. 0.95 (step 0.05) on the candidate's val
rows (pred = floor(u) + (frac(u) >= theta)) and prints val and test MAE at
1/2 and at the chosen theta; the served candidate (best training-time val
metric) first.  Reads candidates_<db>_<seed>.csv (run.sh with ACC_DUMP=1).

    /usr/bin/python3 bench/accuracy/threshold_study.py DIR/candidates_shop_*.csv
"""
import sys

import numpy as np

import ensemble_study

GRID = np.round(np.concatenate([np.arange(0.002, 0.05, 0.002), np.arange(0.05, 0.951, 0.05)]), 3)


def round_at(u, theta):
    f = np.floor(u)
    return f + ((u - f) >= theta)


def mae(y, p):
    return float(np.mean(np.abs(y - p)))


def load(path):
    """ensemble_study.load for the numerical tasks: {task: {(step, weights):
    {"vm": val metric, "val"/"test": (keys, labels, unrounded values)}}}"""
    return {t: cs for t, cs in ensemble_study.load(path).items() if "churn" not in t and "heavy" not in t}


def main(paths):
    for path in paths:
        for task, cs in load(path).items():
            keys = sorted(cs, key=lambda k: (cs[k]["vm"] if cs[k]["vm"] is not None else float("inf"),
                                             k[1] != "average", -k[0]))
            print(f"== {path}: {task} (val rows {len(cs[keys[0]]['val'][1])}, test rows {len(cs[keys[0]]['test'][1])})")
            print("  step weights   val@.5  val@th  theta  test@.5 test@th  (first: served)")
            for k in keys:
                (_, yv, uv), (_, yt, ut) = cs[k]["val"], cs[k]["test"]
                vals = [mae(yv, round_at(uv, t)) for t in GRID]
                th = float(GRID[int(np.argmin(vals))])
                print(f"  {k[0]:4d} {k[1]:8s} {mae(yv, round_at(uv, .5)):.4f}  {min(vals):.4f}  {th:.3f}  "
                      f"{mae(yt, round_at(ut, .5)):.4f}  {mae(yt, round_at(ut, th)):.4f}")
            # the unrounded value's spread around the threshold on test (served)
            _, yt, ut = cs[keys[0]]["test"]
            fr = ut - np.floor(ut)
            hist = np.histogram(fr, bins=10, range=(0, 1))[0]
            print("  served test frac(u) deciles:", " ".join(str(h) for h in hist))
            for lo in np.arange(0, 1, 0.1):
                sel = (fr >= lo) & (fr < lo + 0.1) & (np.floor(ut) == 0)
                if sel.sum():
                    print(f"    u in [{lo:.1f}, {lo + .1:.1f}): {sel.sum():5d} rows, P(label >= 1) = {np.mean(yt[sel] >= 1):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
