#!/usr/bin/python3
"""bench/accuracy/football_score.py: the football benchmark's own metrics for
headwater's predictions and the last-value baselines, on the test rows the
GBDT is scored on (football.sh).

    football_score.py LABEL TEAM.csv PLAYER.csv OUT.tsv [PREDS_HW.csv...]

TEAM.csv, PLAYER.csv: football_features.sql's rows (task, row_key, split,
label, features).  PREDS_HW.csv: football_preds.sql's (one per seed).
Appends to OUT.tsv (report.py's lines: task, method, seed, metric, value,
n_test):
  - the last-value baseline of each task, computed from the features (only
    data dated <= obs_time): team_unbeaten the team's unbeaten share over its
    last year, team_goals its goals per match over its last year, player_scores
    his goals in the last year; a row without that history gets the train
    positive rate / train median;
  - headwater's test metric per seed (AUROC as gbdt.py, MAE), labelled LABEL.
Fails when a headwater file does not cover exactly the test rows of the
features (the comparison must be on the same rows).
"""
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gbdt import auroc  # noqa: E402  (the same AUROC as the GBDT's figures)

LAST_VALUE = {"team_unbeaten": ("unbeaten_1y", "its unbeaten share over the last year"),
              "team_goals": ("gf_1y", "its goals per match over the last year"),
              "player_scores": ("goals_1y", "his goals in the last year")}


def metric(task, y, p):
    return ("mae", float(np.abs(y - p).mean())) if task == "team_goals" else ("auroc", float(auroc(y > 0.5, p)))


def main():
    label, team_csv, player_csv, out = sys.argv[1:5]
    test = {}                                   # task -> {row_key: label}
    res = open(out, "a")
    for path in (team_csv, player_csv):
        with open(path) as f:
            r = csv.DictReader(f)
            rows = list(r)
        for task, (col, what) in LAST_VALUE.items():
            tr = [x for x in rows if x["task"] == task and x["split"] == "train"]
            te = [x for x in rows if x["task"] == task and x["split"] == "test"]
            if not te:
                continue
            test[task] = {x["row_key"]: float(x["label"]) for x in te}
            ytr = np.array([float(x["label"]) for x in tr])
            fill = np.median(ytr) if task == "team_goals" else ytr.mean()
            y = np.array([float(x["label"]) for x in te])
            p = np.array([float(x[col]) if x[col] != "" else fill for x in te])
            name, v = metric(task, y, p)
            res.write(f"{task}\tlast value ({what})\t0\t{name}\t{v:.6f}\t{len(te)}\n")
    for path in sys.argv[5:]:
        runs = {}                               # (task, seed) -> {row_key: pred}
        with open(path) as f:
            for x in csv.DictReader(f):
                runs.setdefault((x["task"], int(x["seed"])), {})[x["row_key"]] = float(x["pred"])
        for (task, seed), preds in sorted(runs.items()):
            if set(preds) != set(test[task]):
                sys.exit(f"football_score.py: {path}: {task} seed {seed} predicts {len(preds)} rows, "
                         f"the test split has {len(test[task])} ({len(set(test[task]) - set(preds))} missing)")
            keys = sorted(preds)
            y = np.array([test[task][k] for k in keys])
            name, v = metric(task, y, np.array([preds[k] for k in keys]))
            res.write(f"{task}\t{label}\t{seed}\t{name}\t{v:.6f}\t{len(keys)}\n")
    res.close()


if __name__ == "__main__":
    main()
