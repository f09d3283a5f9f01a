#!/usr/bin/python3
"""bench/accuracy/gbdt.py: the GBDT and trivial baselines of the accuracy benchmark.

    gbdt.py FEATURES.csv SEEDS OUT.tsv [PREDS.csv]

FEATURES.csv: task, a row key (customer_id; any name: it names the key column
of PREDS.csv too), split, label, then numeric features (NULL = missing), as
written by *_features.sql.  For each task and seed: XGBoost
(Debian's python3-xgboost) trained on the train split, early-stopped on val,
a small grid (depth 3/6; regression also squared vs absolute error) chosen by
the val metric, evaluated on test.  Trivial baselines on the same test rows:
the train positive rate (AUROC 0.5) / the train mean and median.
Appends lines "task<TAB>method<TAB>seed<TAB>metric<TAB>value<TAB>n_test" to OUT.tsv,
and with PREDS.csv the chosen model's test predictions, one row per test row
(method, seed, task, customer_id (FEATURES.csv's key column), label, pred:
test_preds.sql's columns), for paired.py.
"""
import csv
import sys

import numpy as np
import xgboost as xgb


def auroc(y, p):
    """Mann-Whitney AUROC with average ranks for ties (as rt_evaluate)."""
    y = np.asarray(y, dtype=bool)
    order = np.argsort(p, kind="mergesort")
    ps = np.asarray(p)[order]
    ranks = np.empty(len(p))
    i = 0
    while i < len(ps):  # average rank of each run of ties
        j = i
        while j + 1 < len(ps) and ps[j + 1] == ps[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1
        i = j + 1
    npos, nneg = y.sum(), (~y).sum()
    return (ranks[y].sum() - npos * (npos + 1) / 2.0) / (npos * nneg)


def load(path):
    rows = {}
    with open(path) as f:
        r = csv.reader(f)
        head = next(r)
        for line in r:
            rows.setdefault(line[0], []).append(line)
    return head[1], head[4:], rows


def main():
    path, seeds, out = sys.argv[1], [int(s) for s in sys.argv[2].split()], sys.argv[3]
    key, feats, tasks = load(path)
    res = open(out, "a")
    preds = None
    if len(sys.argv) > 4:
        preds = csv.writer(open(sys.argv[4], "w", newline=""))
        preds.writerow(["method", "seed", "task", key, "label", "pred"])
    for task, lines in tasks.items():
        split = np.array([l[2] for l in lines])
        y = np.array([float(l[3]) for l in lines])
        X = np.array([[float(v) if v != "" else np.nan for v in l[4:]] for l in lines])  # [n, F]
        tr, va, te = split == "train", split == "val", split == "test"
        cls = set(np.unique(y)) <= {0.0, 1.0}
        metric = "auroc" if cls else "mae"
        n_te = int(te.sum())
        if cls:
            res.write(f"{task}\ttrivial (train positive rate)\t0\tauroc\t0.5\t{n_te}\n")
        else:
            for name, c in (("train mean", y[tr].mean()), ("train median", np.median(y[tr]))):
                res.write(f"{task}\ttrivial ({name})\t0\tmae\t{np.abs(y[te] - c).mean():.6f}\t{n_te}\n")
        grid = [("binary:logistic", d) for d in (3, 6)] if cls else \
               [(o, d) for o in ("reg:squarederror", "reg:absoluteerror") for d in (3, 6)]
        for seed in seeds:
            best = None
            for obj, depth in grid:
                params = {"objective": obj, "max_depth": depth, "eta": 0.05, "subsample": 0.8,
                          "colsample_bytree": 0.8, "min_child_weight": 5, "tree_method": "hist",
                          "eval_metric": "auc" if cls else "mae", "seed": seed, "nthread": 2}
                dtr, dva, dte = (xgb.DMatrix(X[s], label=y[s]) for s in (tr, va, te))
                model = xgb.train(params, dtr, num_boost_round=2000, evals=[(dva, "val")],
                                  early_stopping_rounds=50, verbose_eval=False)
                it = (0, model.best_iteration + 1)
                pva, pte = model.predict(dva, iteration_range=it), model.predict(dte, iteration_range=it)
                if cls:
                    val = auroc(y[va], pva)
                    test = auroc(y[te], pte)
                    better = best is None or val > best[0]
                else:
                    val = np.abs(y[va] - pva).mean()
                    test = np.abs(y[te] - pte).mean()
                    better = best is None or val < best[0]
                if better:
                    best = (val, test, obj, depth, model.best_iteration, pte)
            print(f"  gbdt {task} seed {seed}: val {metric} {best[0]:.4f}, test {best[1]:.4f} "
                  f"({best[2]}, depth {best[3]}, {best[4] + 1} trees)", file=sys.stderr)
            res.write(f"{task}\tGBDT (XGBoost, {len(feats)} SQL features)\t{seed}\t{metric}\t{best[1]:.6f}\t{n_te}\n")
            if preds:
                ids = [l[1] for l in lines]
                for i, p in zip(np.flatnonzero(te), best[5]):
                    preds.writerow(["GBDT", seed, task, ids[i], y[i], float(p)])
    res.close()


if __name__ == "__main__":
    main()
