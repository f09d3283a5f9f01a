#!/usr/bin/python3
"""bench/accuracy/report.py RESULTS.tsv: one table per task: method, metric
mean +- std over seeds (sample std, n-1), per-seed values, test rows.
RESULTS.tsv lines: task, method, seed, metric, value, n_test (gbdt.py, run.sh)."""
import statistics
import sys

rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
tasks = []
for r in rows:
    if r[0] not in tasks:
        tasks.append(r[0])
for task in tasks:
    tr = [r for r in rows if r[0] == task]
    metric, n = tr[0][3], tr[0][5]
    better = "higher is better" if metric == "auroc" else "lower is better"
    print(f"\n== {task}: test {metric} ({better}), {n} test rows")
    print(f"| method | {metric} mean ± std | per seed |")
    print("|---|---|---|")
    methods = []
    for r in tr:
        if r[1] not in methods:
            methods.append(r[1])
    for m in methods:
        v = [float(r[4]) for r in tr if r[1] == m]
        seeds = [r[2] for r in tr if r[1] == m]
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        per = ", ".join(f"{x:.4f}" for x in v) if len(v) > 1 else "(deterministic)"
        ns = {r[5] for r in tr if r[1] == m}
        warn = "" if ns == {n} else f" (test rows {sorted(ns)}!)"
        print(f"| {m} | {statistics.mean(v):.4f} ± {sd:.4f} | {per}{warn} |")
