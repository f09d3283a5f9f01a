#!/usr/bin/env python3
"""The player task's two parts, and the recording of scorers behind one of them.

    football_coverage.py RESULTS_DIR DATA_DIR

RESULTS_DIR: a bench/accuracy/football.sh results folder (preds_hw_*.csv,
preds_gbdt_player.csv, player_team.csv); DATA_DIR: the football database's
folder (results.csv, goalscorers.csv).

player_scores asks whether a recent scorer scores in the next year, and a
goal counts only where the data records its scorer.  Only part of the goals
are recorded, and the share moves from year to year and team to team (a
continental tournament recorded in full, a team's friendlies not at all).
Per test year this prints, over the teams (weighted by their players):

- how the team's label rate (the share of its scorers who score that year)
  follows the share of its goals recorded that year (unknown at the
  observation time), the share recorded the year before (known), and its
  number of matches that year (unknown);
- how each model's mean prediction for the team follows last year's share;
- the AUROC of each team's mean prediction ("which teams' scorers score":
  between teams) and the mean AUROC inside each team (which of a team's
  scorers score: within teams, weighted by positive-negative pairs).

Then the within-team AUROC of headwater minus the GBDT over all test years,
with a 95% bootstrap interval over the (team, year) groups.  Predictions are
averaged over each method's seeds.
"""
import collections
import csv
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gbdt import auroc  # noqa: E402

TASK = 'player_scores'


def recorded_shares(data):
    """(team, year) -> [goals scored, goals with a recorded scorer, matches]."""
    scorers = collections.Counter()
    for r in csv.DictReader(open(os.path.join(data, 'goalscorers.csv'))):
        scorers[(r['date'], r['home_team'], r['away_team'], r['team'])] += 1
    acc = collections.defaultdict(lambda: [0, 0, 0])
    for r in csv.DictReader(open(os.path.join(data, 'results.csv'))):
        if r['home_score'] in ('NA', ''):
            continue
        for team, goals in ((r['home_team'], int(r['home_score'])), (r['away_team'], int(r['away_score']))):
            a = acc[(team, r['date'][:4])]
            a[0] += goals
            a[1] += min(goals, scorers[(r['date'], r['home_team'], r['away_team'], team)])
            a[2] += 1
    return acc


def mean_preds(paths):
    """row_key -> (label, prediction averaged over the files' seeds)."""
    sums = collections.defaultdict(list)
    labels = {}
    for p in paths:
        for r in csv.DictReader(open(p)):
            if r['task'] == TASK:
                sums[r['row_key']].append(float(r['pred']))
                labels[r['row_key']] = float(r['label'])
    return {k: (labels[k], float(np.mean(v))) for k, v in sums.items()}


def weighted_corr(a, b, w):
    ok = ~np.isnan(a) & ~np.isnan(b)
    a, b, w = a[ok], b[ok], w[ok]
    a = a - np.average(a, weights=w)
    b = b - np.average(b, weights=w)
    return np.sum(w * a * b) / np.sqrt(np.sum(w * a * a) * np.sum(w * b * b))


def within_team(groups, y, p):
    """Per group with both labels: (pairs, AUROC inside the group)."""
    out = []
    for ix in groups:
        npos = y[ix].sum()
        if 0 < npos < len(ix):
            out.append((npos * (len(ix) - npos), auroc(y[ix], p[ix])))
    return out


def main(res, data):
    team = dict((r[0], r[1]) for r in csv.reader(open(os.path.join(res, 'player_team.csv'))) if r[0] != 'player_id')
    hw_files = sorted(os.path.join(res, f) for f in os.listdir(res) if f.startswith('preds_hw_'))
    hw, gb = mean_preds(hw_files), mean_preds([os.path.join(res, 'preds_gbdt_player.csv')])
    shares = recorded_shares(data)

    def share(t, year):
        g, rec, _ = shares.get((t, str(year)), (0, 0, 0))
        return rec / g if g else np.nan

    print('player_scores by test year (%d headwater runs; GBDT averaged over its seeds)' % len(hw_files))
    print('%4s %5s | label rate follows: share this year, last year, matches | mean prediction follows last year: hw, gbdt'
          ' | between-team AUROC hw, gbdt | within-team hw, gbdt' % ('year', 'teams'))
    pairs = []
    for year in sorted({k.split('@')[1][:4] for k in hw}):
        keys = [k for k in hw if k.split('@')[1][:4] == year]
        y = np.array([hw[k][0] for k in keys])
        p = {'hw': np.array([hw[k][1] for k in keys]), 'gbdt': np.array([gb[k][1] for k in keys])}
        by = collections.defaultdict(list)
        for i, k in enumerate(keys):
            by[team[k.split('@')[0]]].append(i)
        names = list(by)
        groups = [np.array(by[t]) for t in names]
        w = np.array([len(ix) for ix in groups], float)
        rate = np.array([y[ix].mean() for ix in groups])
        cur = np.array([share(t, int(year)) for t in names])
        prev = np.array([share(t, int(year) - 1) for t in names])
        matches = np.array([shares.get((t, year), (0, 0, 0))[2] for t in names], float)
        tmean = {m: np.array([v[ix].mean() for ix in groups]) for m, v in p.items()}
        between = {}
        for m, tm in tmean.items():
            per_row = np.empty(len(keys))
            for j, ix in enumerate(groups):
                per_row[ix] = tm[j]
            between[m] = auroc(y, per_row)
        wi = {m: within_team(groups, y, v) for m, v in p.items()}
        wavg = {m: np.average([a for _, a in v], weights=[n for n, _ in v]) for m, v in wi.items()}
        pairs += [(n, a - b) for (n, a), (_, b) in zip(wi['hw'], wi['gbdt'])]
        print('%4s %5d | %+.2f %+.2f %+.2f | %+.2f %+.2f | %.4f %.4f | %.4f %.4f' % (
            year, len(names), weighted_corr(rate, cur, w), weighted_corr(rate, prev, w), weighted_corr(rate, matches, w),
            weighted_corr(tmean['hw'], prev, w), weighted_corr(tmean['gbdt'], prev, w),
            between['hw'], between['gbdt'], wavg['hw'], wavg['gbdt']))
    n = np.array([a for a, _ in pairs])
    d = np.array([b for _, b in pairs])
    rng = np.random.default_rng(1)
    boot = [np.average(d[i], weights=n[i]) for i in (rng.integers(0, len(d), len(d)) for _ in range(2000))]
    lo, hi = np.percentile(boot, [2.5, 97.5])
    print('within-team AUROC, headwater minus the GBDT, all test years: %+.4f (95%% bootstrap over %d team-years: %+.4f .. %+.4f)'
          % (np.average(d, weights=n), len(d), lo, hi))


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit(__doc__.split('\n\n')[1])
    main(sys.argv[1], sys.argv[2])
