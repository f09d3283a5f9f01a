#!/usr/bin/python3
"""bench/accuracy/gbdt_capacity.py: the GBDT's metric on train, val and test as its trees grow.

    gbdt_capacity.py FEATURES.csv TASK [SEED]

gbdt.py keeps, per task, the grid point and the number of trees that score
best on val.  This prints, for each of gbdt.py's grid points (same
parameters, no early stopping), the train, val and test metric after
5 .. 400 trees -- for a regression task the MAE of the raw prediction and of
its rounding -- so one can see what early stopping on val chose: a model
that fits the training rows (train metric still improving) or one that
stopped early because the val rows disagree with them.
"""
import sys

import numpy as np
import xgboost as xgb

from gbdt import auroc, load

TREES = (5, 10, 20, 50, 100, 200, 400)


def main():
    feats, tasks = load(sys.argv[1])
    lines = tasks[sys.argv[2]]
    seed = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    split = np.array([l[2] for l in lines])
    y = np.array([float(l[3]) for l in lines])
    X = np.array([[float(v) if v != "" else np.nan for v in l[4:]] for l in lines])   # [n, F]
    parts = [("train", split == "train"), ("val", split == "val"), ("test", split == "test")]
    cls = set(np.unique(y)) <= {0.0, 1.0}
    grid = [("binary:logistic", d) for d in (3, 6)] if cls else \
           [(o, d) for o in ("reg:squarederror", "reg:absoluteerror") for d in (3, 6)]
    print(f"{sys.argv[2]}: {'AUROC' if cls else 'MAE (raw / rounded)'} on " +
          ", ".join(f"{name} ({m.sum()} rows)" for name, m in parts) + f", seed {seed}")
    for obj, depth in grid:
        params = {"objective": obj, "max_depth": depth, "eta": 0.05, "subsample": 0.8,
                  "colsample_bytree": 0.8, "min_child_weight": 5, "tree_method": "hist",
                  "seed": seed, "nthread": 2}
        model = xgb.train(params, xgb.DMatrix(X[parts[0][1]], label=y[parts[0][1]]), num_boost_round=max(TREES))
        print(f"  {obj}, depth {depth}")
        for n in TREES:
            cells = []
            for name, m in parts:
                p = model.predict(xgb.DMatrix(X[m]), iteration_range=(0, n))
                cells.append(f"{name} {auroc(y[m], p):.4f}" if cls else
                             f"{name} {np.abs(y[m] - p).mean():.4f} / {np.abs(y[m] - np.round(p)).mean():.4f}")
            print(f"    {n:4d} trees: " + "   ".join(cells))


if __name__ == "__main__":
    main()
