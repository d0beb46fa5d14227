"""How a campaign's repeats were taken, read from its records (not from what was asked).

Repeats inside one allocation share its nodes and its moment; repeats across jobs (the GASNet-EX
paper's 16 samples, `repeats_across: jobs`) span allocations and node sets. A reader comparing
spreads needs to know which, so the report says it, from the job and node list of the step each
record carries (``Record.step``), or from the sessions when no scheduler was involved.
"""

from __future__ import annotations

from typing import Dict, List, Set

from commstack.store.record import Record


def how_repeats_were_taken(records: List[Record]) -> str:
    runs = [r for r in records if not r.imported and r.ok] or [r for r in records if not r.imported]
    if not runs and any(r.imported and not r.published for r in records):
        return ("imported outputs: outputs that print the same parameters are the repeats of "
                "a point, in the order imported")
    if not runs:
        return "no runs (imported values only)"
    repeats = max(r.repeat for r in runs)
    jobs_of: Dict[str, Dict[int, str]] = {}  # point -> repeat -> job
    for r in runs:
        if r.step and r.step.job_id:
            jobs_of.setdefault(r.point_id, {})[r.repeat] = r.step.job_id
    if not jobs_of:
        sessions = {r.session for r in runs if r.session}
        return (f"up to {repeats} per point outside Slurm, in {len(sessions)} session(s); "
                f"repeats are the outer loop (every point once, then again), {_order(runs)}")
    all_jobs = sorted({j for by_repeat in jobs_of.values() for j in by_repeat.values()},
                      key=_job_order)
    jobs = f"{len(all_jobs)} job(s): {_ids(all_jobs)}"
    distinct = [len(set(by_repeat.values())) for by_repeat in jobs_of.values()]
    taken = [len(by_repeat) for by_repeat in jobs_of.values()]
    if len(all_jobs) == 1:
        return (f"up to {repeats} per point within one Slurm job ({all_jobs[0]}): one "
                "allocation, its nodes for every sample")
    if distinct == taken:
        return (f"across jobs: each repeat of a point in its own Slurm job ({jobs}); "
                f"node sets per point: {_node_sets_per_point(runs)}")
    if set(distinct) == {1}:
        return f"within jobs: all repeats of a point in one Slurm job ({jobs})"
    return (f"mixed: some points' repeats share a Slurm job, others' do not ({jobs}); node "
            f"sets per point: {_node_sets_per_point(runs)}")


def _order(runs: List[Record]) -> str:
    """How the points were ordered within a repeat, as the records say."""
    kinds = {(r.order or {}).get("kind") for r in runs}
    seeds = sorted({str((r.order or {}).get("seed")) for r in runs if r.order and
                    r.order.get("kind") == "shuffled"})
    if kinds == {"shuffled"}:
        return f"in a shuffled order within each repeat (seed {', '.join(seeds)})"
    if kinds == {"fixed"}:
        return "in the matrix's order within each repeat"
    if kinds == {None}:
        return "in an order the records do not state (written before the order was recorded)"
    return "in orders that differ between sessions (shuffled and fixed)"


def _node_sets_per_point(runs: List[Record]) -> str:
    sets: Dict[str, Set[tuple]] = {}
    for r in runs:
        if r.step and r.step.nodes:
            sets.setdefault(r.point_id, set()).add(tuple(sorted(r.step.nodes)))
    if not sets:
        return "not recorded"
    counts = sorted(len(s) for s in sets.values())
    return str(counts[0]) if counts[0] == counts[-1] else f"{counts[0]}–{counts[-1]}"


def _job_order(job_id: str) -> tuple:
    return (0, int(job_id), "") if job_id.isdigit() else (1, 0, job_id)


def _ids(jobs: List[str], shown: int = 8) -> str:
    if len(jobs) <= shown:
        return ", ".join(jobs)
    return ", ".join(jobs[:shown]) + f", … ({len(jobs)} in all)"
