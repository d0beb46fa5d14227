"""Self-consistent performance guidelines (commstack.report.guidelines) on real ReproMPI
outputs: a violation planted in a real run (Allreduce made 20 times slower at one size, so that
Reduce + Bcast is faster) is reported with its size and composition, the unplanted run's
verdict at that size is not changed elsewhere, and a guideline file that cannot be read is named.
`commstack query --guidelines` answers from a campaign on disk with the report section's own
evidence rows, and says when it finds no violation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from commstack.benchmarks.reprompi import parse_reprompi
from commstack.report import guidelines
from commstack.store.campaign import Campaign
from commstack.store.files import write_new
from commstack.store.record import Record
from tests.sweeps import commstack

pytest.importorskip("scipy", reason="skipped: scipy not installed (pip install 'commstack[stats]')")

FIXTURE = Path(__file__).parent / "fixtures" / "reprompi" / "openmpi-4.1.4" / \
    "barrier-bcast-allreduce-np2.out"
MPICH = FIXTURE.parents[1] / "mpich-4.0.2" / FIXTURE.name  # a run with no violation
FACTOR = 20


def _planted(text: str, call: str, count: int, factor: float) -> str:
    """The output with every per-call run-time of ``call`` at ``count`` multiplied."""
    def slower(m: "re.Match[str]") -> str:
        return f"{m['head']}{float(m['t']) * factor:.10f}"
    pattern = re.compile(rf"^(?P<head>\s+{call}\s+\d+\s+{count}\s+)(?P<t>[\d.]+)$", re.M)
    out, n = pattern.subn(slower, text)
    assert n == 20, n
    return out


def _record(text: str, stack: str = "ompi") -> Record:
    return Record(campaign="c", machine="local", benchmark="reprompi", point_id=stack, repeat=1,
                  attempt=1, params={"stack": stack, "calls": "MPI_Bcast,MPI_Allreduce,MPI_Reduce",
                                     "proc_sync": "MPI_Barrier"},
                  status="ok", stack=stack, ranks=2, parsed=parse_reprompi(text).rows,
                  stdout="stdout.txt")


def _inputs(*texts: str):
    """(records, their outputs) of runs that printed ``texts``: what ``settings`` takes."""
    records = [_record(t, f"s{i}") for i, t in enumerate(texts)]
    outputs = {r.point_id: t for r, t in zip(records, texts)}
    return records, lambda r: outputs[r.point_id]


def _checks(*texts: str):
    found = guidelines.settings(*_inputs(*texts))
    return guidelines.check(found, guidelines.read_guidelines())


def test_a_planted_violation_is_reported_with_its_sizes_and_composition():
    text = FIXTURE.read_text()
    planted = _planted(text, "MPI_Allreduce", 1024, FACTOR)
    checks, unchecked = _checks(text, planted)
    by = {(c.setting.stack, c.guideline.name, c.m): c for c in checks}
    # 3 sizes x (Allreduce <= Reduce + Bcast, Reduce <= Allreduce) per run; per-call samples
    assert len(checks) == 12 and by[("s1", "allreduce-reduce-bcast", 1024)].collective.n == 20
    assert set(unchecked) == {"gather-allgather", "allgather-gather-bcast",
                              "bcast-scatter-allgather"}
    hit = by[("s1", "allreduce-reduce-bcast", 1024)]
    assert hit.verdict == "worse"
    before = by[("s0", "allreduce-reduce-bcast", 1024)]
    assert hit.shift.ratio == pytest.approx(before.shift.ratio * FACTOR, rel=0.01)
    # the planted run's other sizes are the unplanted run's, verdict for verdict
    for m in (8, 65536):
        assert by[("s1", "allreduce-reduce-bcast", m)].verdict == \
            by[("s0", "allreduce-reduce-bcast", m)].verdict

    lines = guidelines.lines(checks, unchecked, guidelines.read_guidelines())
    # The report's form (every check as columns, a Check made only where shown) says the same.
    found = guidelines.settings(*_inputs(text, planted))
    checked = guidelines.measure(found, guidelines.read_guidelines(), intervals=False)
    assert [checked.check(i) for i in range(len(checked))] == guidelines.check(
        found, guidelines.read_guidelines(), intervals=False)[0]
    assert guidelines.lines(checked, checked.unchecked, guidelines.read_guidelines()) == lines
    row = next(line for line in lines if line.startswith("| ReproMPI, s1") and "| 1024 |" in line)
    assert "Allreduce(m) <= Reduce(m) + Bcast(m)" in row
    assert "Reduce(1024 B) + Bcast(1024 B)" in row
    assert any("Holm" in line for line in lines)


def test_settings_are_kept_apart():
    """Timings of two stacks are never composed with each other."""
    text = FIXTURE.read_text()
    only_allreduce = "\n".join(line for line in text.splitlines()
                               if "MPI_Reduce" not in line and "MPI_Bcast " not in line)
    records = [_record(only_allreduce, "a"), _record(text.replace("MPI_Allreduce", "MPI_Scan"), "b")]
    outputs = {"a": only_allreduce, "b": text.replace("MPI_Allreduce", "MPI_Scan")}
    found = guidelines.settings(records, lambda r: outputs[r.point_id])
    checks, _ = guidelines.check(found, guidelines.read_guidelines())
    assert checks == []


def test_shipped_guidelines_each_have_a_source():
    rules = guidelines.read_guidelines()
    assert [r.name for r in rules] == ["allreduce-reduce-bcast", "reduce-allreduce",
                                       "gather-allgather", "allgather-gather-bcast",
                                       "bcast-scatter-allgather"]
    assert all("Träff" in r.source for r in rules)
    assert str(rules[3].composition[1]) == "Bcast(p*m)"


@pytest.mark.parametrize("body, message", [
    ("name\trule\tsource\nx\tAllreduce(m) < Reduce(m)\tpaper\n", ":2: rule"),
    ("name\trule\tsource\nx\tAllreduce(m) <= Reduce(m)\n", ":2: expected name, rule and source"),
    ("name\trule\n", ":1: header"),
    ("name\trule\tsource\nx\tBcast(m/p) <= Scatter(m)\tpaper\n", ":2: the collective on the left"),
])
def test_a_broken_guideline_file_is_named_with_its_line(tmp_path, body, message):
    path = tmp_path / "g.tsv"
    path.write_text(body)
    with pytest.raises(guidelines.GuidelineError, match=re.escape(f"{path}{message}")):
        guidelines.read_guidelines(path)


@pytest.mark.parametrize("family, name, expected", [
    ("osu", "Broadcast Latency", "Bcast"), ("osu", "Allreduce Latency", "Allreduce"),
    ("osu", "Non-blocking Allreduce Latency", None), ("osu", "Latency", None),
    ("imb", "Allgather", "Allgather"), ("reprompi", "MPI_Scatter", "Scatter"),
    ("reprompi", "Send_Recv", None),
])
def test_collective_names_of_each_family(family, name, expected):
    assert guidelines.collective_name(family, name) == expected


def test_the_sync_method_section_compares_each_method_with_the_barrier():
    """Real -v runs of one stack with MPI_Barrier and window synchronisation: the section
    compares them call by call, with the start skew each method left."""
    from commstack.report import sync_method

    folder = FIXTURE.parent
    texts = {"barrier": (folder / "barrier-v-bcast-np2.out").read_text(),
             "window": (folder / "window-v-bcast-np2.out").read_text()}
    records = []
    for name, sync in (("barrier", "MPI_Barrier"), ("window", "window")):
        rec = _record(texts[name], "ompi")
        rec.point_id, rec.params = name, {"stack": "ompi", "proc_sync": sync, "verbose": True}
        records.append(rec)
    lines = sync_method.section(records, lambda r: texts[r.point_id])
    assert any(line.startswith("- ompi, window vs MPI_Barrier:") for line in lines)
    table = [line for line in lines if line.startswith("| ompi | window | MPI_Bcast")]
    # 8 bytes: 10 valid calls each; 1024 bytes: every window call out of its window, no cell
    assert len(table) == 1 and "| 8 |" in table[0] and "(n=10)" in table[0]
    assert sync_method.section(records[:1], lambda r: texts[r.point_id]) == []


def test_only_records_of_settings_naming_a_guideline_s_collectives_are_read():
    """The report reads rows again only where the parameters name every collective of a rule."""
    text = FIXTURE.read_text()
    rules = guidelines.read_guidelines()
    both = _record(text, "a")
    alone = _record(text, "b")
    alone.params = dict(alone.params, calls="MPI_Allreduce")
    assert guidelines.relevant([both, alone], rules) == [both]
    osu = Record(campaign="c", machine="local", benchmark="osu", point_id="o", repeat=1,
                 attempt=1, params={"executable": "osu_allreduce"}, status="ok", ranks=2)
    assert guidelines.named_collectives(osu) == {"Allreduce"}
    assert guidelines.relevant([osu], rules) == []


# --- commstack query --guidelines ----------------------------------------------------------------


def _campaign(root: Path, texts: "dict[str, str]") -> Path:
    """A campaign on disk as a sweep leaves it: per point one ReproMPI run, its record and the
    run's stdout (from which the per-call samples are read)."""
    campaign = Campaign(root)
    campaign.ensure({"campaign": root.name, "machine": root.parent.name, "benchmark": "reprompi"})
    for stack, text in texts.items():
        record = _record(text, stack)
        record.campaign, record.machine = root.name, root.parent.name
        folder = campaign.point_dir(record.point_id) / "rep1.try1"
        folder.mkdir(parents=True)
        (folder / "stdout.txt").write_text(text)
        write_new(folder / "record.json", record.dumps())
    return root


def _table_rows(text: str) -> list:
    return [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]


def test_query_prints_the_planted_violation_with_the_report_sections_evidence(tmp_path):
    text = MPICH.read_text()
    root = _campaign(tmp_path / "results" / "local" / "planted",
                     {"s0": text, "s1": _planted(text, "MPI_Allreduce", 1024, FACTOR)})
    run = commstack("query", str(root), "--guidelines")
    assert run.returncode == 1, run.stderr  # a violation: exit 1, as compare on a regression
    rows = _table_rows(run.stdout)
    assert rows[0] == ("| setting | guideline | m [bytes] | collective | composition | "
                       "ratio [interval] | p (Holm) | verdict |")
    assert len(rows) == 2, run.stdout  # the planted violation alone: the MPICH run has none
    hit = rows[1]
    assert hit.startswith("| ReproMPI, s1, 2 processes, proc_sync=MPI_Barrier | "
                          "Allreduce(m) <= Reduce(m) + Bcast(m) | 1024 |")
    assert re.search(r"\| [\d.]+ \[[\d.]+–[\d.]+\] \(n=20\) \| Reduce\(1024 B\) \+ "
                     r"Bcast\(1024 B\): [\d.]+ \[[\d.]+–[\d.]+\] \(n=20\) \|", hit), hit
    assert hit.endswith("| worse |")
    assert "12 checks in 2 settings; 1 violations" in run.stdout and "Holm" in run.stdout
    # The same rows as the report's section of this campaign: one check, not a second copy.
    records = [r for r in Campaign(root).records() if not r.published]
    section = guidelines.campaign_section(Campaign(root), records)
    assert _table_rows("\n".join(section)) == rows
    # The report checks the rows its samples hold (read from the index), not each record.json
    # again: the same section.
    assert commstack("report", str(root)).returncode == 0
    report = (root / "report" / "report.md").read_text()
    start = report.index("## Self-consistent performance guidelines")
    end = report.find("\n## ", start + 1)
    assert _table_rows(report[start:end if end > 0 else None]) == rows

    csv_run = commstack("query", str(root), "--guidelines", "--csv")
    assert csv_run.returncode == 1, csv_run.stderr
    import csv
    import io

    (row,) = list(csv.DictReader(io.StringIO(csv_run.stdout)))
    assert (row["guideline"], row["m"], row["verdict"], row["collective_n"]) == \
        ("allreduce-reduce-bcast", "1024", "worse", "20")
    assert float(row["p_adjusted"]) < 0.05 and float(row["ratio"]) > 1.05
    assert float(row["collective_ci_low"]) <= float(row["collective_median"]) \
        <= float(row["collective_ci_high"])


def test_query_says_when_no_guideline_is_violated(tmp_path):
    root = _campaign(tmp_path / "results" / "local" / "clean", {"s0": MPICH.read_text()})
    run = commstack("query", str(root), "--guidelines")
    assert run.returncode == 0, run.stderr
    assert "no violation found (6 checks)" in run.stdout
    assert _table_rows(run.stdout) == []
    assert "Guidelines checked: `Allreduce(m) <= Reduce(m) + Bcast(m)`" in run.stdout
    # Rows of --best-per-size are not chosen here: refused in one sentence, nothing checked.
    bad = commstack("query", str(root), "--guidelines", "--benchmark", "reprompi")
    assert bad.returncode == 2 and "--benchmark and --test choose the rows of --best-per-size" \
        in bad.stderr and bad.stdout == ""


def _contents(found):
    return [(s.family, s.stack, s.processes, s.params, [(k, list(v)) for k, v in
                                                         s.samples.items()]) for s in found]


def test_settings_from_sample_layouts_equal_those_read_entry_by_entry():
    """A report places each record's samples by their layout of row keys, worked out once per
    layout (``layout=Samples.layout``); the settings, their order and every sample in its order
    are those read entry by entry, with a record that added no samples and a ReproMPI run whose
    per-call samples are read from its output among them."""
    from commstack.benchmarks.imb import parse_imb
    from commstack.report.load import Samples, add_samples

    imb = Path(__file__).parent / "fixtures" / "imb" / "openmpi-4.1.4"
    default = parse_imb((imb / "v2021.11-mpi1-default-np2-msglog0-4.out").read_text()).rows
    # The same rows in another order: another layout of the same length and row key names.
    runs = [(default, 2), (default[::-1], 2),
            (parse_imb((imb / "v2021.11-mpi1-allreduce-barrier-np6-npmin1.out").read_text()
                       ).rows, 6)]
    records, samples = [], Samples()
    for stack in ("ompi", "mpich"):
        for t, (rows, ranks) in enumerate(runs):
            for repeat in (1, 2, 3):
                parsed = [{**row, "t_avg_us": row["t_avg_us"] * (1 + repeat / 10)}
                          if "t_avg_us" in row else row for row in rows]
                record = Record(campaign="c", machine="local", benchmark="imb-mpi1",
                                point_id=f"{stack}{t}", repeat=repeat, attempt=1,
                                params={"stack": stack}, status="ok", stack=stack, ranks=ranks,
                                parsed=parsed)
                records.append(record)
                if (stack, t, repeat) != ("mpich", 0, 2):
                    add_samples(samples, record)
    reprompi = _record(FIXTURE.read_text())
    records.insert(3, reprompi)
    add_samples(samples, reprompi)

    def entries(record):
        found = samples.entries(record, ("benchmark", "bytes", "np"))
        return guidelines.row_entries(record, record.parsed) if found is None else found

    def output(record):
        return FIXTURE.read_text() if record is reprompi else None

    plain = guidelines.settings(records, output, entries=entries)
    laid = guidelines.settings(records, output, entries=entries, layout=samples.layout)
    assert len(plain) >= 5 and sum(len(v) for s in plain for v in s.samples.values()) > 500
    assert _contents(laid) == _contents(plain)
