"""Query the tidy rows of many campaigns and machines: the best setting per message size, SQL,
or the self-consistent performance guidelines the campaigns violate.

  commstack query results --best-per-size --benchmark imb-mpi1 --test Allreduce [--csv]
  commstack query results/a/x results/b/y --sql "SELECT machine, count(*) FROM rows GROUP BY 1"
  commstack query results/local/reprompi-sync --guidelines [--csv]
  commstack query results/local/quick --records > records.csv

Paths are campaigns or folders holding them (searched below). Each campaign's Parquet index
(<campaign>/index/, see commstack.store.tidy_index) is first brought up to date from its records,
which needs pyarrow (extra `index`); --sql runs DuckDB (extra `query`) over a view `rows` of every
index.

--best-per-size: per machine and result row (process count, message size), each setting's median
over its repeats with its 95 % interval, as summary.csv has them. The setting with the best median
is called best only when it beats every other by :mod:`commstack.stats` (a Mann-Whitney U test of
the repeats, every comparison of the query corrected together, and the practical threshold);
otherwise the row says which settings it cannot be told apart from. Oversubscribed runs and IMB
sub-runs are compared only among themselves, and marked (⚠ov, ⚠sub); so are simulated runs
(SimGrid SMPI), per platform, every such setting marked "(simulated)" and its platform in the
column ``simulated``. A setting is the point's parameters that differ between the machine's points.

Every index row says whether it was simulated: the column ``simulated`` holds the platform its
simulator ran (null for a measured row), so ``--sql "... WHERE simulated IS NULL"`` keeps the
measured rows and ``WHERE simulated IS NOT NULL`` the simulated ones.

--records: every result row with all its fields as CSV (records.csv, see
:mod:`commstack.store.table`), written by Arrow from the index.

--guidelines: the report's guideline check (:mod:`commstack.cli.query_guidelines`), read from the
records and run outputs themselves (no index needed). Exit status 1 when a guideline is violated
(as `compare` on a regression), 0 when none is.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from commstack import simulated, stats
from commstack.aggregate import print_quantum
from commstack.benchmarks import registry
from commstack.errors import CampaignError
from commstack.markdown_table import table
from commstack.optional import require
from commstack.report.numbers import Resolution, cell
from commstack.store import table as records_csv
from commstack.store import tidy_index

BEST_COLUMNS = ["machine", "benchmark", "test", "np", "bytes", "mode", "metric", "unit", "marks", "verdict",
                "setting", "campaign", "point_id", "n", "median", "ci_low", "ci_high",
                "not_told_apart", "runner_up", "runner_up_median", "settings", "simulated"]


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", type=Path, nargs="+",
                   help="campaigns (results/<machine>/<campaign>) or folders holding them")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--best-per-size", action="store_true",
                      help="the best setting per machine and message size, by corrected rank tests")
    what.add_argument("--sql", metavar="QUERY",
                      help="a DuckDB query over the view `rows` (the index's columns)")
    what.add_argument("--records", action="store_true",
                      help="every result row with all its fields, as CSV (records.csv)")
    what.add_argument("--guidelines", action="store_true",
                      help="the self-consistent performance guidelines (e.g. Allreduce <= Reduce "
                           "+ Bcast) the campaigns violate, with their evidence; exit 1 on a violation")
    p.add_argument("--benchmark", help="with --best-per-size: the matrix benchmark (imb-mpi1, osu, ...)")
    p.add_argument("--test", help="with --best-per-size: the row's benchmark (Allreduce, osu_latency, ...)")
    p.add_argument("--csv", action="store_true", help="CSV instead of a Markdown table")


def execute(args: argparse.Namespace) -> int:
    campaigns = find_campaigns(args.paths)
    if args.guidelines:
        return _guidelines(campaigns, args)
    if args.records:
        if args.benchmark or args.test:
            raise CampaignError("--benchmark and --test choose the rows of --best-per-size; "
                                "--records writes every row")
        sys.stdout.flush()
        records_csv.write_csv(campaigns, sys.stdout.buffer)
        return 0
    if args.sql:
        headers, rows = sql(campaigns, args.sql)
    else:
        if not args.benchmark:
            raise CampaignError("--best-per-size needs --benchmark (one of: "
                                f"{', '.join(registry.names())})")
        found = best_per_size(tidy_index.read_rows(campaigns), args.benchmark, args.test)
        headers = BEST_COLUMNS
        rows = [[r.get(c) for c in BEST_COLUMNS] for r in found] if args.csv else []
        if not args.csv:
            headers, rows = best_markdown(found)
    sys.stdout.write(to_csv(headers, rows) if args.csv else "\n".join(table(
        headers, [[_shown(v) for v in r] for r in rows], _align(len(headers), rows))) + "\n")
    return 0


def _guidelines(campaigns: List[Path], args: argparse.Namespace) -> int:
    from commstack.cli import query_guidelines

    if args.benchmark or args.test:
        raise CampaignError("--benchmark and --test choose the rows of --best-per-size; "
                            "--guidelines checks every collective the campaigns timed")
    done, unchecked, rules = query_guidelines.checks(campaigns)
    if args.csv:
        sys.stdout.write(to_csv(*query_guidelines.csv_rows(done)))
    else:
        sys.stdout.write("\n".join(query_guidelines.markdown(done, unchecked, rules)) + "\n")
    # as compare exits 1 on a regression: a CI step can gate on a violated guideline
    return 1 if query_guidelines.violated(done) else 0


def _align(width: int, rows: Sequence[Sequence[Any]]) -> str:
    """Numbers right, the rest left."""
    def numeric(i: int) -> bool:
        values = [r[i] for r in rows if r[i] is not None]
        return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                    for v in values)
    return "".join("r" if numeric(i) else "l" for i in range(width))


def find_campaigns(paths: Sequence[Path]) -> List[Path]:
    from commstack.store.results import campaigns

    return campaigns(paths)


# --- best setting per message size --------------------------------------------------------------
@dataclass
class Candidate:
    """One setting's repeats at one result row."""

    machine: str
    campaign: str
    point_id: str
    params: Dict[str, Any]
    row: Dict[str, Any]  # test, np, bytes, metric, unit, lower_is_better, row_key, ranks
    samples: List[float] = field(default_factory=list)
    oversubscribed: bool = False

    @property
    def subrun(self) -> bool:
        ranks, np_ = self.row["ranks"], self.row["np"]
        return bool(ranks and np_ and np_ < ranks)

    @property
    def marks(self) -> str:
        return " ".join(m for m, on in (("⚠ov", self.oversubscribed), ("⚠sub", self.subrun)) if on)

    def center(self) -> stats.Center:
        return stats.describe(self.samples, rate=not self.row["lower_is_better"])

    def rank(self) -> float:
        """The median, negated when higher is better: lower always ranks first."""
        value = self.center().median
        return value if self.row["lower_is_better"] else -value


def best_per_size(rows: List[Dict[str, Any]], benchmark: str, test: Optional[str]
                  ) -> List[Dict[str, Any]]:
    """One result per machine, result row and cleanliness: the best setting and its verdict."""
    known = {b.lower(): b for b in registry.names()}
    if benchmark.lower() not in known:
        raise CampaignError(f"--benchmark {benchmark}: unknown; known: {', '.join(registry.names())}")
    name = known[benchmark.lower()]
    candidates: Dict[Tuple, Candidate] = {}
    tests = set()
    for r in rows:
        if r["benchmark"] != name or r["status"] != "ok" or r["metric"] is None \
                or (r["row_status"] or "ok") != "ok":
            continue
        tests.add(r["test"])
        if test and (r["test"] or "").lower() != test.lower():
            continue
        key = (r["machine"], r["campaign"], r["point_id"], r["metric"], *_row(r))
        cand = candidates.get(key)
        if cand is None:
            cand = candidates[key] = Candidate(
                r["machine"], r["campaign"], r["point_id"], json.loads(r["params"]),
                {k: r.get(k) for k in ("test", "np", "bytes", "mode", "metric", "unit",
                                       "lower_is_better", "row_key", "ranks", "simulated")})
        cand.samples.append(r["value"])
        cand.oversubscribed = cand.oversubscribed or bool(r["oversubscribed"])
    if not candidates:
        raise CampaignError(f"no successful {name} rows" + (f" of {test}" if test else "")
                            + " in these campaigns" + (f" (tests there: {', '.join(sorted(t for t in tests if t))})"
                                                       if tests else ""))
    labels = _setting_labels(list(candidates.values()))
    groups: Dict[Tuple, List[Candidate]] = {}
    for cand in candidates.values():
        # a simulated setting is compared only with those simulated on its platform
        groups.setdefault((cand.machine, cand.row["metric"], *_row(cand.row), cand.marks,
                           cand.row["simulated"] or ""), []).append(cand)
    out = _decide_all(list(groups.values()), labels, name)
    return sorted(out, key=lambda r: (r["machine"], r["simulated"] or "", r["marks"] != "",
                                      r["marks"], r["test"] or "", r["np"] or 0,
                                      r["bytes"] if r["bytes"] is not None else -1, r["metric"]))


def _row(row: Dict[str, Any]) -> Tuple:
    """What tells result rows apart (the family's row keys, as aggregate groups them)."""
    return tuple(row[k] for k in ("test", "np", "bytes", "mode", "row_key"))


def _setting_labels(candidates: List[Candidate]) -> Dict[Tuple[str, str, str], str]:
    """Per machine, each point named by the parameters that differ between its points (and its
    campaign, when the machine has several)."""
    by_machine: Dict[str, Dict[Tuple[str, str], Dict[str, Any]]] = {}
    for c in candidates:
        by_machine.setdefault(c.machine, {})[(c.campaign, c.point_id)] = c.params
    labels = {}
    for machine, points in by_machine.items():
        names = sorted({k for p in points.values() for k in p})
        varying = [k for k in names if len({json.dumps(p.get(k), default=str) for p in points.values()}) > 1]
        several = len({campaign for campaign, _ in points}) > 1
        for (campaign, point_id), params in points.items():
            text = " ".join(f"{k}={params[k]}" for k in varying if k in params) or "(the only setting)"
            labels[(machine, campaign, point_id)] = f"{campaign}: {text}" if several else text
    for c in candidates:  # a simulated setting says so wherever it is named
        if c.row.get("simulated"):
            key = (c.machine, c.campaign, c.point_id)
            labels[key] = simulated.marked(simulated.unmarked(labels[key]), True)
    return labels


def _decide_all(groups: List[List[Candidate]], labels: Dict[Tuple[str, str, str], str],
                benchmark: str) -> List[Dict[str, Any]]:
    """Per group the setting with the best median, tested against every other of its group; all
    the query's tests corrected together."""
    ordered = [sorted(g, key=lambda c: (c.rank(), labels[(c.machine, c.campaign, c.point_id)]))
               for g in groups]
    shifts = [stats.shift(g[0].samples, other.samples, bool(g[0].row["lower_is_better"]),
                          interval=False) for g in ordered for other in g[1:]]
    calls = iter(stats.verdicts(shifts))
    return [_best(g, [next(calls) for _ in g[1:]], labels, benchmark) for g in ordered]


def _best(ordered: List[Candidate], calls: List[str], labels: Dict[Tuple[str, str, str], str],
          benchmark: str) -> Dict[str, Any]:
    best, others = ordered[0], ordered[1:]
    apart = [c for c, call in zip(others, calls) if call != stats.WORSE]
    label = labels[(best.machine, best.campaign, best.point_id)]
    if not others:
        verdict = "only setting " + ("simulated" if best.row.get("simulated") else "measured")
    elif apart:
        verdict = (f"no win: {len(apart)} of {len(others)} other setting(s) not told apart "
                   "(corrected rank test, threshold)")
    else:
        verdict = f"best, significantly better than all {len(others)} other(s)"
    runner = others[0] if others else None
    center = best.center()
    runner_center = runner.center() if runner else None
    return {
        "machine": best.machine, "benchmark": benchmark, "test": best.row["test"],
        "np": best.row["np"], "bytes": best.row["bytes"], "mode": best.row["mode"],
        "metric": best.row["metric"],
        "unit": best.row["unit"], "marks": best.marks, "verdict": verdict, "setting": label,
        "campaign": best.campaign, "point_id": best.point_id, "n": len(best.samples),
        "median": center.median, "ci_low": center.low, "ci_high": center.high,
        "min": min(best.samples), "max": max(best.samples),
        "not_told_apart": "; ".join(labels[(c.machine, c.campaign, c.point_id)] for c in apart),
        "runner_up": labels[(runner.machine, runner.campaign, runner.point_id)] if runner else None,
        "runner_up_median": runner_center.median if runner_center else None,
        "runner_up_ci_low": runner_center.low if runner_center else None,
        "runner_up_ci_high": runner_center.high if runner_center else None,
        "runner_up_n": len(runner.samples) if runner else None,
        "settings": len(ordered), "repeats": max(len(c.samples) for c in ordered),
        "simulated": best.row.get("simulated"),
    }


def best_markdown(found: List[Dict[str, Any]]) -> Tuple[List[str], List[List[Any]]]:
    by_metric: Dict[str, List[float]] = {}
    for r in found:
        by_metric.setdefault(r["metric"], []).extend([r["min"], r["max"]])
    res = {m: Resolution.of(print_quantum(v), v) for m, v in by_metric.items()}
    headers = ["machine", "test", "np", "bytes", "metric", "best setting", "median [95 % CI] (n)",
               "verdict", "runner-up", "runner-up median [95 % CI] (n)"]
    rows = []
    for r in found:
        fmt = res[r["metric"]]
        value = cell(r["median"], r["ci_low"], r["ci_high"], r["n"], fmt, r["repeats"],
                     [r["marks"]] if r["marks"] else [])
        runner = (cell(r["runner_up_median"], r["runner_up_ci_low"], r["runner_up_ci_high"],
                       r["runner_up_n"], fmt, r["repeats"]) if r["runner_up"] else None)
        rows.append([r["machine"], r["test"], r["np"], r["bytes"],
                     f"{registry.label(r['metric'])}", r["setting"], value, r["verdict"],
                     r["runner_up"], runner])
    return headers, rows


# --- SQL ----------------------------------------------------------------------------------------
def sql(campaigns: List[Path], query: str) -> Tuple[List[str], List[List[Any]]]:
    duckdb = require("duckdb", "query", "commstack query --sql")
    files = tidy_index.part_files(campaigns)
    if not files:
        raise CampaignError("no records in " + ", ".join(map(str, campaigns)) + " yet")
    listed = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
    con = duckdb.connect()
    try:
        con.execute(f"CREATE VIEW rows AS SELECT * FROM read_parquet([{listed}])")
        result = con.execute(query)
        headers = [d[0] for d in result.description or []]
        return headers, [list(r) for r in result.fetchall()]
    except duckdb.Error as exc:
        raise CampaignError(f"--sql: {str(exc).splitlines()[0]}") from None
    finally:
        con.close()


def to_csv(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(headers)
    writer.writerows([["" if v is None else v for v in r] for r in rows])
    return buf.getvalue()


def _shown(value: Any) -> Any:
    if isinstance(value, float):
        from commstack.plain_number import plain

        return plain(value, 6)
    return value
