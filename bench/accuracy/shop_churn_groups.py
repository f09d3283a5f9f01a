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
predictions (median, 10th and 90th percentile).  Beside the test AUROC,
the AUROC expected over the labels' draws given the rule's probabilities
(0.92, 0.08): the figure the test AUROC scatters around, for this
planted task only; the rule itself scores its ceiling there.
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


def expected_auroc(scores, probs):
    """The AUROC expected over the labels' draws when row i is positive with
    probability probs[i] (independently): sum over pairs p_i (1 - p_j)
    [s_i > s_j] (ties half) over sum p_i (1 - p_j), i != j.  It takes away
    the luck of how the noisy labels fall inside the rule's groups."""
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    num = 0.0
    below = 0.0                      # sum of (1 - p) over rows with a lower score
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and scores[order[j + 1]] == scores[order[i]]:
            j += 1
        tie = order[i:j + 1]
        tie_neg = sum(1 - probs[k] for k in tie)
        for k in tie:
            num += probs[k] * (below + 0.5 * (tie_neg - (1 - probs[k])))
        below += tie_neg
        i = j + 1
    den = sum(probs) * sum(1 - p for p in probs) - sum(p * (1 - p) for p in probs)
    return num / den


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
            rule_p = []
            for x in rs:
                r = rule[x["customer_id"]]
                score = 2 * int(r["noord"]) + int(r["ret"]) + int(r["lowr"]) - int(r["vip"])
                rule_p.append(0.92 if score >= 2 else 0.08)
            ea = expected_auroc([float(x["pred"]) for x in rs], rule_p)
            print(f"{rs[0]['method']} seed {seed} ({path}): AUROC {a:.4f}, expected over the label draws {ea:.4f}, "
                  f"rule-high {len(high)}, rule-low {len(low)}, pairs ordered against the rule {wrong:.4f}")
            for k in sorted(groups):
                v = sorted(groups[k])
                n = len(v)
                print(f"   rule {'high' if k[0] else 'low '} score {k[1]:2d} noord {k[2]} ret {k[3]} lowr {k[4]} vip {k[5]}:"
                      f" n {n:4d}  pred median {v[n // 2]:.3f}  p10 {v[n // 10]:.3f}  p90 {v[9 * n // 10]:.3f}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--self-test"]:
        # the rule as a scorer reaches the expected ceiling; a reversed one
        # its complement; a constant 1/2; and both AUROCs agree on noise-free labels
        p = [0.92] * 30 + [0.08] * 70
        assert abs(expected_auroc(p, p) + expected_auroc([-x for x in p], p) - 1) < 1e-12
        assert abs(expected_auroc([0] * 100, p) - 0.5) < 1e-12
        lab = [1] * 30 + [0] * 70
        assert abs(expected_auroc(list(range(100, 0, -1)), [float(l) for l in lab])
                   - auroc(list(range(100, 0, -1)), lab)) < 1e-12
        print("self-test passed")
        sys.exit(0)
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2:])
