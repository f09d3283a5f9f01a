#!/usr/bin/python3
"""bench/accuracy/segment_swap_study.py: how much the shop model's test
predictions move when the customers' vip and consumer segments are exchanged.

    segment_swap_study.py DIR/segment_swap_shop_SEED.csv

Reads shop_segment_swap.sql's CSV (run.sh with ACC_SEGMENT_SWAP=1) and
prints, per task and true segment: rows, label mean, mean prediction (and
mean P(label >= 1) / P(churn) where there is one) as the data is and with
the segment swapped, the share of rows whose served prediction changed, and
the task's metric both ways (MAE for orders_30d; AUROC of the whole test set
for churn).  What rt_demo_shop planted: a vip customer places up to 13
orders, a consumer up to 7, and a vip's churn score is 1 lower -- so a model
that reads the segment predicts more orders and less churn for the same
history as vip.
"""
import csv
import sys

import numpy as np

from ensemble_study import auroc


def f(v):
    return float(v) if v != "" else np.nan


def main():
    rows = list(csv.DictReader(open(sys.argv[1])))
    for task in sorted({r["task"] for r in rows}):
        tr = [r for r in rows if r["task"] == task]
        y = np.array([f(r["label"]) for r in tr])
        a = np.array([f(r["pred"]) for r in tr])
        b = np.array([f(r["pred_swapped"]) for r in tr])
        pa = np.array([f(r["p1"]) for r in tr])
        pb = np.array([f(r["p1_swapped"]) for r in tr])
        seg = np.array([r["segment"] for r in tr])
        if task == "churn":
            print(f"== {task}: {len(tr)} test rows, AUROC as is {auroc(y, a):.4f}, swapped {auroc(y, b):.4f}")
        else:
            print(f"== {task}: {len(tr)} test rows, MAE as is {np.abs(y - a).mean():.4f}, "
                  f"swapped {np.abs(y - b).mean():.4f}")
        print("| segment | rows | label mean | pred mean as is / swapped | P(>=1) mean as is / swapped "
              "| predictions changed | MAE as is / swapped |")
        print("|---|---|---|---|---|---|---|")
        for s in ("vip", "business", "consumer"):
            m = seg == s
            if not m.any():
                continue
            p1 = (f"{np.nanmean(pa[m]):.3f} / {np.nanmean(pb[m]):.3f}"
                  if not np.isnan(pa[m]).all() else "-")
            print(f"| {s} | {m.sum()} | {y[m].mean():.3f} | {a[m].mean():.3f} / {b[m].mean():.3f} | {p1} "
                  f"| {np.mean(a[m] != b[m]):.1%} | {np.abs(y[m] - a[m]).mean():.4f} / "
                  f"{np.abs(y[m] - b[m]).mean():.4f} |")
        print()


if __name__ == "__main__":
    main()
