#!/usr/bin/python3
"""bench/accuracy/shop_churn_groups.py: where a method's churn ranking leaves
the planted rule, offline, from the prediction CSVs of run.sh.

    psql ... -d acc_shop -A -F, -P footer=off -c "SELECT r.customer_id,
        (NOT EXISTS (SELECT 1 FROM shop.orders o WHERE o.customer_id = r.customer_id
           AND o.ordered_at < r.obs_time AND o.ordered_at >= r.obs_time - interval '90 days'))::int AS noord,
        (EXISTS (SELECT 1 FROM shop.returns rt JOIN shop.orders o USING (order_id)
           WHERE o.customer_id = r.customer_id AND rt.returned_at < r.obs_time
           AND rt.returned_at >= r.obs_time - interval '90 days'))::int AS ret,
        coalesce((SELECT avg(rating) <= 2 FROM shop.reviews v WHERE v.customer_id = r.customer_id
           AND v.created_at < r.obs_time), false)::int AS lowr,
        (cu.segment = 'vip')::int AS vip
        FROM acc.rows r JOIN shop.customers cu USING (customer_id)
        WHERE r.task = 'churn' AND r.split = 'test'" > churn_rule.csv
    shop_churn_groups.py churn_rule.csv preds_hw_shop_1.csv preds_gbdt_shop.csv ...

rt_demo_shop's churn label is Bernoulli(0.92) where the rule's score
2 noord + ret + lowr - vip is >= 2, else Bernoulli(0.08)
(docs/demo_database.md), so no ranking beats the rule's own AUROC by more
than the luck of how ties fall.  A method's shortfall is the share of
(rule-high, rule-low) customer pairs it orders the wrong way round,
times about 0.84 (the two classes' difference in churn rate).  Per method
and seed: the AUROC, that share, and each rule group's size and
predictions (median, 10th and 90th percentile).
"""
import bisect
import collections
import csv
import sys


def auroc(scores, labels):
    """Mann-Whitney AUROC with ties counted half."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    ranks = [0.0] * len(scores)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    npos = sum(labels)
    nneg = len(labels) - npos
    rsum = sum(r for r, l in zip(ranks, labels) if l)
    return (rsum - npos * (npos + 1) / 2) / (npos * nneg)


def main(rule_csv, pred_csvs):
    rule = {r["customer_id"]: r for r in csv.DictReader(open(rule_csv))}
    for path in pred_csvs:
        rows = [x for x in csv.DictReader(open(path)) if x["task"] == "churn"]
        for seed in sorted({x["seed"] for x in rows}):
            rs = [x for x in rows if x["seed"] == seed and x["customer_id"] in rule]
            groups = collections.defaultdict(list)
            for x in rs:
                r = rule[x["customer_id"]]
                parts = tuple(int(r[k]) for k in ("noord", "ret", "lowr", "vip"))
                score = 2 * parts[0] + parts[1] + parts[2] - parts[3]
                groups[(score >= 2, score) + parts].append(float(x["pred"]))
            high = [p for k, v in groups.items() if k[0] for p in v]
            low = sorted(p for k, v in groups.items() if not k[0] for p in v)
            wrong = sum(len(low) - bisect.bisect_right(low, p) for p in high) / (len(high) * len(low))
            a = auroc([float(x["pred"]) for x in rs], [int(float(x["label"])) for x in rs])
            print(f"{rs[0]['method']} seed {seed} ({path}): AUROC {a:.4f}, "
                  f"rule-high {len(high)}, rule-low {len(low)}, pairs ordered against the rule {wrong:.4f}")
            for k in sorted(groups):
                v = sorted(groups[k])
                n = len(v)
                print(f"   rule {'high' if k[0] else 'low '} score {k[1]:2d} noord {k[2]} ret {k[3]} lowr {k[4]} vip {k[5]}:"
                      f" n {n:4d}  pred median {v[n // 2]:.3f}  p10 {v[n // 10]:.3f}  p90 {v[9 * n // 10]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
