#!/usr/bin/python3
"""bench/accuracy/ranking_study.py: how well does each method rank the rows of
a count task by "at least one"?

Under MAE a count prediction of 1 instead of 0 pays off where P(label >= 1) >
1/2, so what a model can reach depends on how well it ranks the rows by that
probability, and most of all at the top of the list, where the cut falls.
This prints, for the orders_30d test rows: the AUROC of the score against
(label >= 1) and the share of label >= 1 among the top n rows by score (n =
150 .. 1200) for
  - an XGBoost classifier of (label >= 1) on the GBDT benchmark's hand-written
    features (the same features as gbdt.py; 500 rounds at most, depth 3, eta
    0.05, rounds chosen on the val rows),
  - every headwater candidate (checkpoint, weights) of the given dumps (its
    value before rounding),
and the test MAE each reaches when it predicts 1 for its top n (0 else).

    /usr/bin/python3 bench/accuracy/ranking_study.py DIR/shop_features.csv DIR/candidates_shop_*.csv
"""
import csv
import sys

import numpy as np
import xgboost as xgb

from ensemble_study import auroc
from threshold_study import load

TOP = (150, 240, 300, 450, 600, 800, 1200)
TASK = "orders_30d"


def features(path):
    rows = [r for r in csv.DictReader(open(path)) if r["task"] == TASK]
    names = [k for k in rows[0] if k not in ("task", "customer_id", "split", "label", "obs_time")]
    out = {}
    for s in ("train", "val", "test"):
        rs = sorted((r for r in rows if r["split"] == s), key=lambda r: r["customer_id"])
        x = np.array([[float(r[f]) if r[f] else np.nan for f in names] for r in rs])
        out[s] = (x, np.array([float(r["label"]) for r in rs]), [r["customer_id"] for r in rs])
    return out


def line(name, y, score):
    order = np.argsort(-score, kind="mergesort")
    prec = " ".join(f"{(y[order[:n]] >= 1).mean():.3f}" for n in TOP)
    maes = " ".join(f"{np.mean(np.abs(y - np.isin(np.arange(len(y)), order[:n]))):.4f}" for n in TOP)
    print(f"  {name:28s} AUROC {auroc(y >= 1, score):.4f}  top-n share >= 1: {prec}  MAE: {maes}")


def main(feat_path, cand_paths):
    f = features(feat_path)
    dtr = xgb.DMatrix(f["train"][0], label=f["train"][1] >= 1)
    dva = xgb.DMatrix(f["val"][0], label=f["val"][1] >= 1)
    b = xgb.train({"objective": "binary:logistic", "max_depth": 3, "eta": 0.05, "eval_metric": "auc", "seed": 1},
                  dtr, 500, evals=[(dva, "val")], early_stopping_rounds=30, verbose_eval=False)
    y = f["test"][1]
    print(f"{TASK} test rows {len(y)}, share >= 1 {np.mean(y >= 1):.3f}; n = {', '.join(map(str, TOP))}")
    line(f"GBDT classifier ({b.best_iteration + 1} trees)", y,
         b.predict(xgb.DMatrix(f["test"][0]), iteration_range=(0, b.best_iteration + 1)))
    for path in cand_paths:
        for task, cs in load(path).items():
            for k in sorted(cs):
                _, yc, u = cs[k]["test"]
                if not np.array_equal(yc, y):
                    sys.exit(f"{path}: the test rows differ from {feat_path}'s")
                line(f"{path.split('/')[-2]} {k[0]} {k[1]}", y, u)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
