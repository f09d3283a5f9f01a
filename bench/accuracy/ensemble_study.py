#!/usr/bin/python3
"""bench/accuracy/ensemble_study.py: would averaging several candidates'
predictions beat the one served?  Reads candidates_<db>_<seed>.csv files
(run.sh with ACC_DUMP=1: every (checkpoint, weights) candidate's predictions
on the val and test rows) and prints, per task and seed, the test metric of:
the served candidate (best training-time val metric), the mean over
candidates, the top-k candidates by val metric averaged (k = 2, 3, 4, 6), all
candidates from 40% of the run on averaged, and the served candidates of all
seeds averaged (a 3-model ensemble: three times the training).  It averages
the predictions before rounding (the dump's unrounded column) and does not
round the averages.

    /usr/bin/python3 bench/accuracy/ensemble_study.py DIR/candidates_shop_*.csv
"""
import csv
import sys
from collections import defaultdict

import numpy as np


def auroc(y, p):
    y = np.asarray(y) > 0.5
    p = np.asarray(p)
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    sp = p[order]
    i = 0
    while i < len(sp):  # average ranks of ties
        j = i
        while j + 1 < len(sp) and sp[j + 1] == sp[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    npos = y.sum()
    nneg = len(y) - npos
    return (ranks[y].sum() - npos * (npos + 1) / 2) / (npos * nneg)


def mae(y, p):
    return float(np.mean(np.abs(np.asarray(y) - np.asarray(p))))


def load(path):
    """-> {task: {(step, weights): {"val": v, split: (keys, labels, preds)}}}"""
    rows = defaultdict(lambda: defaultdict(lambda: {"val": None, "val_rows": [], "test_rows": []}))
    with open(path) as f:
        for r in csv.DictReader(f):
            c = rows[r["task"]][(int(r["step"]), r["weights"])]
            c["val"] = float(r["val"]) if r["val"] else None
            # averaged before any rounding (candidates_dump.sql's unrounded column)
            pred = r.get("unrounded") or r["pred"]
            c[r["split"] + "_rows"].append(((r["customer_id"], r["obs_time"]), float(r["label"]), float(pred)))
    out = {}
    for task, cands in rows.items():
        out[task] = {}
        for k, c in cands.items():
            d = {"vm": c["val"]}
            for s in ("val", "test"):
                rs = sorted(c[s + "_rows"])
                d[s] = ([r[0] for r in rs], np.array([r[1] for r in rs]), np.array([r[2] for r in rs]))
            out[task][k] = d
    return out


def main(paths):
    per_task = defaultdict(lambda: defaultdict(list))  # task -> method -> [metric per seed]
    served_preds = defaultdict(list)
    for path in paths:
        data = load(path)
        for task, cands in data.items():
            higher = "churn" in task or "heavy" in task
            metric = auroc if higher else mae
            better = (lambda a, b: a > b) if higher else (lambda a, b: a < b)
            keys = sorted(cands, key=lambda k: ((-cands[k]["vm"] if higher else cands[k]["vm"])
                                                if cands[k]["vm"] is not None else float("inf"),
                                                k[1] != "average", -k[0]))
            y = next(iter(cands.values()))["test"][1]
            yv = next(iter(cands.values()))["val"][1]
            test = lambda ks: metric(y, np.mean([cands[k]["test"][2] for k in ks], axis=0))
            val = lambda ks: metric(yv, np.mean([cands[k]["val"][2] for k in ks], axis=0))
            res = per_task[task]
            res["served (best val)"].append(test(keys[:1]))
            res["mean of candidates"].append(np.mean([test([k]) for k in keys]))
            res["best candidate (test, oracle)"].append((max if higher else min)([test([k]) for k in keys]))
            for n in (2, 3, 4, 6):
                res[f"top-{n} by val, averaged"].append(test(keys[:n]))
            last = max(k[0] for k in keys)
            late = [k for k in keys if k[0] >= 0.4 * last]
            res["all from 40% of the run, averaged"].append(test(late))
            if not higher:
                res["all from 40%, median"].append(metric(y, np.median([cands[k]["test"][2] for k in late], axis=0)))
            # choose honestly on val between the served one and top-3
            pick = keys[:3] if better(val(keys[:3]), val(keys[:1])) else keys[:1]
            res["top-3 or served, chosen on val"].append(test(pick))
            served_preds[task].append((y, cands[keys[0]]["test"][2], np.mean([cands[k]["test"][2] for k in keys[:3]], axis=0)))
    for task, res in per_task.items():
        higher = "churn" in task or "heavy" in task
        metric = auroc if higher else mae
        sp = served_preds[task]
        if len(sp) > 1:
            res["served of all seeds, averaged (one figure)"].append(metric(sp[0][0], np.mean([s[1] for s in sp], axis=0)))
            res["top-3 of all seeds, averaged (one figure)"].append(metric(sp[0][0], np.mean([s[2] for s in sp], axis=0)))
        print(f"== {task}: test {'AUROC' if higher else 'MAE'}")
        for m, v in res.items():
            print(f"  {m:45s} {np.mean(v):.4f} ± {np.std(v):.4f}  ({', '.join(f'{x:.4f}' for x in v)})")


if __name__ == "__main__":
    main(sys.argv[1:])
