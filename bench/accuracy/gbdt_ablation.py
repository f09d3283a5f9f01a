#!/usr/bin/python3
"""bench/accuracy/gbdt_ablation.py: what the GBDT baseline's lead rests on.

    gbdt_ablation.py FEATURES.csv SEEDS DROP [DROP ...]

FEATURES.csv: as gbdt.py reads it (written by *_features.sql, e.g. the
football benchmark's player_features.csv in its results folder).  Each DROP
is a comma-separated list of feature columns, or a prefix ending in '*'
(team_*); "-" drops nothing.  For each DROP, gbdt.py is run on the features
without those columns, over SEEDS, and the test metric of each task is
printed beside the number of features kept: which features carry the
baseline, so the model can be given the same knowledge in a general form.

Example (the football player task):
    gbdt_ablation.py $FB_OUT/player_features.csv "1 2 3" - 'team_*,share_of_team_goals_1y' team_elo,team_opp_elo_1y
"""
import csv
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def dropped(header, spec):
    """The columns of header that spec names (never the first four)."""
    if spec == "-":
        return set()
    out = set()
    for item in spec.split(","):
        for col in header[4:]:
            if col == item or (item.endswith("*") and col.startswith(item[:-1])):
                out.add(col)
    return out


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    features, seeds, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
    with open(features, newline="") as f:
        rows = list(csv.reader(f))
    header = rows[0]
    with tempfile.TemporaryDirectory() as tmp:
        for spec in specs:
            drop = dropped(header, spec)
            if spec != "-" and not drop:
                sys.exit(f"gbdt_ablation.py: '{spec}' names no feature column of {features}")
            keep = [i for i, c in enumerate(header) if c not in drop]
            sub = os.path.join(tmp, "features.csv")
            res = os.path.join(tmp, "results.tsv")
            with open(sub, "w", newline="") as f:
                csv.writer(f).writerows([[r[i] for i in keep] for r in rows])
            if os.path.exists(res):
                os.remove(res)
            subprocess.run([sys.executable, os.path.join(HERE, "gbdt.py"), sub, seeds, res], check=True,
                           stdout=subprocess.DEVNULL)
            by_task = {}
            with open(res) as f:
                for line in f:
                    task, method, _seed, metric, value, _n = line.rstrip("\n").split("\t")
                    if method.startswith("GBDT"):
                        by_task.setdefault((task, metric), []).append(float(value))
            for (task, metric), vals in sorted(by_task.items()):
                mean = sum(vals) / len(vals)
                print(f"{task}\tdrop {spec}\t{len(keep) - 4} features\t{metric}\t{mean:.4f}\t"
                      f"seeds {' '.join(f'{v:.4f}' for v in vals)}")


if __name__ == "__main__":
    main()
