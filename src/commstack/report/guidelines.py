"""Self-consistent performance guidelines: a collective should not be slower than a composition
of others that does the same job (Träff, Gropp & Thakur, TPDS 2010; Hunold's PGChecker, SC-W
2023). The rules, each with its source, are the rows of ``guidelines.tsv`` beside this module.

A rule is checked wherever a campaign measured every collective it names at the sizes it needs
in the same *setting*: one benchmark family (IMB, OSU or ReproMPI; their timings are not mixed),
one stack, one process count and the same parameters apart from those that only choose what is
measured (the collective, the sizes, the repetitions). The samples of a collective at a size are
the per-call run-times of ReproMPI (read back from each run's ``stdout.txt``) or, for IMB and
OSU, which print one average per size and run, the runs' values. The composition's samples are
the sums of its parts' samples taken in order (i-th with i-th). The collective is called slower
than the composition only as :mod:`commstack.stats` calls any difference: Mann-Whitney U,
Holm-corrected over every check of the report, and beyond the 5 % threshold.

The report's section (:mod:`commstack.report.studies.guidelines`) and ``commstack query
--guidelines`` both take a campaign's settings from :func:`campaign_settings`, check them with
:func:`check` and show the evidence of a violation with :func:`evidence_table`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Hashable, List, MutableSequence, Optional, Sequence, Tuple, Union

from commstack import stats
from commstack.benchmarks import registry
from commstack.benchmarks.facts import Collectives
from commstack.markdown_table import table
from commstack.simulated import marked, platform
from commstack.store.campaign import Campaign
from commstack.store.record import Record, RecordError

GUIDELINES = Path(__file__).with_name("guidelines.tsv")
MAX_RULES = 1000  # a guideline file longer than this is refused, not read
MAX_OUTPUT = 256 * 2 ** 20  # a run's stdout read for ReproMPI's per-call samples, at most
METHOD = "holm"  # the correction over all checks made together
_TERM = re.compile(r"^\s*(?P<coll>[A-Z][A-Za-z_]*)\((?P<size>m|p\*m|m/p)\)\s*$")


class GuidelineError(ValueError):
    """A guideline file that cannot be read; the message names the file and line."""


@dataclass(frozen=True)
class Term:
    collective: str
    size: str  # "m", "p*m" or "m/p"

    def bytes(self, m: int, p: int) -> Optional[int]:
        if self.size == "m":
            return m
        if self.size == "p*m":
            return p * m
        return m // p if m % p == 0 else None

    def __str__(self) -> str:
        return f"{self.collective}({self.size})"


@dataclass(frozen=True)
class Guideline:
    name: str
    collective: Term
    composition: Tuple[Term, ...]
    source: str

    @property
    def rule(self) -> str:
        return f"{self.collective} <= {' + '.join(map(str, self.composition))}"


def read_guidelines(path: Path = GUIDELINES) -> List[Guideline]:
    """The guidelines of a file: ``name<TAB>rule<TAB>source`` rows after a header row."""
    out: List[Guideline] = []
    header = False
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if len(out) > MAX_RULES:
                raise GuidelineError(f"{path}:{number}: more than {MAX_RULES} guidelines")
            if not line.strip() or line.startswith("#"):
                continue
            fields = line.rstrip("\n").split("\t")
            if not header:
                if fields != ["name", "rule", "source"]:
                    raise GuidelineError(f"{path}:{number}: header must be name, rule, source")
                header = True
                continue
            if len(fields) != 3 or not all(f.strip() for f in fields):
                raise GuidelineError(f"{path}:{number}: expected name, rule and source, "
                                     "tab-separated")
            name, rule, source = (f.strip() for f in fields)
            left, sep, right = rule.partition("<=")
            terms = [_TERM.match(t) for t in [left, *right.split("+")]] if sep else [None]
            if not all(terms):
                raise GuidelineError(f"{path}:{number}: rule {rule!r} is not "
                                     "'Coll(m) <= Coll(size) + ...' with sizes m, p*m, m/p")
            parts = [Term(t["coll"], t["size"]) for t in terms if t]
            if parts[0].size != "m":
                raise GuidelineError(f"{path}:{number}: the collective on the left is at size m")
            out.append(Guideline(name, parts[0], tuple(parts[1:]), source))
    if not header:
        raise GuidelineError(f"{path}: no header row (name, rule, source)")
    return out


@dataclass
class Setting:
    """The samples of one benchmark family, stack, process count and parameter set."""

    family: str
    stack: str
    processes: int
    params: str  # the parameters that tell settings apart, as sorted JSON
    # usec, as array("d"): 8 bytes a sample (a list of floats takes 32)
    samples: Dict[Tuple[str, int], MutableSequence[float]] = field(default_factory=dict)
    source: str = ""  # the campaign (machine/name), when settings of several are checked together
    simulated: Optional[str] = None  # the platform a simulator ran (commstack.simulated)

    @property
    def label(self) -> str:
        extra = ", ".join(f"{k}={v}" for k, v in json.loads(self.params).items())
        return marked((f"{self.source}: " if self.source else "") + (
            f"{_collectives(self.family).label}, {self.stack}, {self.processes} processes"
            + (f", {extra}" if extra else "")), self.simulated)


@dataclass(frozen=True)
class Check:
    setting: Setting
    guideline: Guideline
    m: int
    collective: stats.Center
    composition: stats.Center
    shift: stats.Shift
    verdict: str = ""
    p_adjusted: float = 1.0  # the rank test's p, corrected over every check made together
    # (composition, collective) samples of a check made without the shift's bootstrap interval
    # (``check(intervals=False)``): ``with_interval`` adds it where it is shown.
    samples: Optional[Tuple[List[float], List[float]]] = field(default=None, repr=False,
                                                               compare=False)


def with_interval(c: Check) -> Check:
    """The check with its shift's bootstrap interval (the same ratio and p)."""
    if c.samples is None:
        return c
    return dataclasses.replace(c, shift=stats.shift(*c.samples), samples=None)


def collective_name(family: str, benchmark: object) -> Optional[str]:
    """The collective a row times, in one spelling for all families (``Bcast``, ...)."""
    return _collectives(family).name_of(benchmark) if isinstance(benchmark, str) else None


def _collectives(family: str) -> Collectives:
    return registry.family(family).collectives  # type: ignore[union-attr,return-value]


def _family(record: Record) -> Optional[str]:
    found = registry.collectives(record.benchmark)
    return found[0] if found is not None else None


def _params(record: Record, family: str) -> Dict[str, object]:
    return {k: v for k, v in sorted(record.params.items())
            if k not in _collectives(family).selecting and k not in ("stack", "nodes")}


class _ParamsText:
    """``json.dumps(_params(record, family))``, made once per point and family (the records of a
    point share its parameters; a record whose parameters differ gets its own)."""

    def __init__(self) -> None:
        self.known: Dict[Tuple[str, str], Tuple[Dict[str, object], str]] = {}

    def __call__(self, record: Record, family: str) -> str:
        key = (record.point_id, family)
        found = self.known.get(key)
        if found is not None and found[0] == record.params:
            return found[1]
        text = json.dumps(_params(record, family), default=str)
        self.known[key] = (record.params, text)
        return text


def named_collectives(record: Record) -> Optional[set]:
    """The collectives a record's parameters ask for (None: the benchmark's default list, which
    may hold any), read without its rows."""
    family = _family(record)
    return _collectives(family).asked(record.params) if family is not None else set()


def relevant(records: Sequence[Record], rules: Sequence[Guideline]) -> List[Record]:
    """The records of the settings whose parameters name every collective of some guideline:
    the only ones whose rows the check reads (a report keeps no rows it does not need)."""
    named: Dict[Tuple, Optional[set]] = {}
    texts = _ParamsText()
    for rec in records:
        family = _family(rec)
        if family is None or not rec.ok or rec.published:
            continue
        key = (family, rec.stack, rec.ranks, texts(rec, family))
        these = named_collectives(rec)
        if key not in named:
            named[key] = these if these is None else set(these)
        elif named[key] is not None:
            named[key] = None if these is None else named[key] | these
    wanted = {key for key, colls in named.items()
              if colls is None or any({rule.collective.collective,
                                       *(t.collective for t in rule.composition)} <= colls
                                      for rule in rules)}
    out = []
    for rec in records:
        family = _family(rec)
        if family is not None and (family, rec.stack, rec.ranks, texts(rec, family)) in wanted:
            out.append(rec)
    return out


Entry = Tuple[object, object, object, float]  # a result row's benchmark, bytes, np, figure


def row_entries(record: Record, rows: Sequence[dict]) -> List[Entry]:
    """The entries of result rows: each row with a figure of merit, as (benchmark, bytes, np,
    value)."""
    out = []
    for row in rows:
        figure = registry.metric_of(row, record.benchmark)
        if figure is not None:
            out.append((row.get("benchmark"), row.get("bytes"), row.get("np"), row[figure.key]))
    return out


def settings(records: Sequence[Record],
             output: Callable[[Record], Optional[str]] = lambda r: None,
             rows: Callable[[Record], List[dict]] = lambda r: r.parsed,
             entries: Optional[Callable[[Record], Sequence[Entry]]] = None,
             layout: Optional[Callable[[Record], Optional[Layout]]] = None) -> List[Setting]:
    """The campaign's collective timings by setting. ``output(record)``: the run's stdout, from
    which ReproMPI's per-call samples are read (None: its rows' medians are used);
    ``rows(record)``: its result rows (a report reads them from record.json only for the
    records :func:`relevant` selects); ``entries(record)``, instead of ``rows``: its rows as
    :data:`Entry` tuples (a report has them in its samples); ``layout(record)``: its entries'
    row keys as one key and their values (:data:`Layout`), or None: then ``entries`` is read
    only for the first record of each layout (a report of 100,000 records has a few)."""
    if entries is None:
        entries = lambda r: row_entries(r, rows(r))  # noqa: E731
    collect = _Collector()
    known: Dict[Tuple, List[Optional[MutableSequence[float]]]] = {}
    for rec in records:
        family = _family(rec)
        if not rec.ok or rec.published or family is None:
            continue
        params = collect.texts(rec, family)
        per_call = None
        read_per_call = _collectives(family).per_call
        if read_per_call is not None:
            text = output(rec)
            try:
                per_call = read_per_call(text) if text else None
            except ValueError:
                per_call = None
        stack = rec.stack or ""
        found = layout(rec) if layout is not None and per_call is None else None
        if found is not None:
            key, values = found
            where = (family, stack, params, rec.ranks, key)
            targets = known.get(where)
            if targets is None:
                targets = known[where] = collect.targets(
                    rec, family, stack, params, collect.layout(family, key, rec, entries))
            for target, value in zip(targets, values):
                if target is not None:
                    target.append(value)
            continue
        items = entries(rec)
        targets = collect.targets(rec, family, stack, params, collect.slots(family, items))
        for target, (benchmark, size, _, value) in zip(targets, items):
            if target is None:
                continue
            calls = per_call.get((benchmark, size)) if per_call else None
            if calls is not None:
                target.extend([t * 1e6 for t in calls.local])
            else:
                target.append(float(value))
    return list(collect.found.values())


# A record's entries' row keys as one hashable (equal for records whose entries have the same
# row keys in the same order) and the entries' values in that order.
Layout = Tuple[Hashable, Sequence[float]]
# An entry's (collective, size) and process count (None: the record's), or None: no guideline
# reads it.
_Slot = Optional[Tuple[Tuple[str, int], object]]


class _Collector:
    """The settings in the order their first samples come, each (collective, size)'s samples
    in one array; an entry's place worked out once per layout of row keys and setting."""

    def __init__(self) -> None:
        self.found: Dict[Tuple, Setting] = {}
        self.texts = _ParamsText()
        self.names: Dict[Tuple[str, object], Optional[str]] = {}  # (family, benchmark): its
        # Every setting's samples under one shared (collective, size) key, as C doubles: a
        # report of 100,000 records holds 800,000 of these arrays (2.4 million samples).
        self.pairs: Dict[Tuple[str, int], Tuple[str, int]] = {}
        self.layouts: Dict[Tuple[str, Hashable], List[_Slot]] = {}

    def layout(self, family: str, key: Hashable, rec: Record,
               entries: Callable[[Record], Sequence[Entry]]) -> List[_Slot]:
        """:meth:`slots` of the entries of a layout ``key``, read from ``rec`` when it is
        new."""
        slots = self.layouts.get((family, key))
        if slots is None:
            slots = self.layouts[(family, key)] = self.slots(family, entries(rec))
        return slots

    def slots(self, family: str, entries: Sequence[Entry]) -> List[_Slot]:
        """Each entry's (collective, size) and process count, or None."""
        slots: List[_Slot] = []
        for benchmark, size, processes, _ in entries:
            name = self.names.get((family, benchmark), _UNSET)
            if name is _UNSET:
                name = self.names[(family, benchmark)] = (
                    _collective(family, benchmark) if isinstance(benchmark, str) else None)
            if name is None or not isinstance(size, int):
                slots.append(None)
            else:
                slots.append((self.pairs.setdefault((name, size), (name, size)), processes))
        return slots

    def targets(self, rec: Record, family: str, stack: str, params: str,
                slots: List[_Slot]) -> List[Optional[MutableSequence[float]]]:
        """The array each entry's sample goes to (None: none), settings and arrays made as
        their first sample comes."""
        by_processes: Dict[object, Dict[Tuple[str, int], MutableSequence[float]]] = {}
        out: List[Optional[MutableSequence[float]]] = []
        for slot in slots:
            if slot is None:
                out.append(None)
                continue
            pair, processes = slot
            processes = processes or rec.ranks
            samples = by_processes.get(processes)
            if samples is None:
                if not isinstance(processes, int):
                    out.append(None)
                    continue
                key = (family, stack, processes, params)
                setting = self.found.get(key)
                if setting is None:
                    setting = self.found[key] = Setting(family, stack, processes, params)
                samples = by_processes[processes] = setting.samples
            values = samples.get(pair)
            if values is None:
                values = samples[pair] = array("d")
            out.append(values)
        return out


_UNSET = object()


@functools.lru_cache(maxsize=4096)
def _collective(family: str, benchmark: str) -> Optional[str]:
    return collective_name(family, benchmark)


def check(found: Sequence[Setting], rules: Sequence[Guideline], method: str = METHOD,
          intervals: bool = True) -> Tuple[List[Check], List[str]]:
    """Every check the measurements allow, with its verdict (``worse``: the collective is
    slower than the composition, a violation), and the rules nothing could check.
    ``intervals=False``: no bootstrap interval of each ratio (a report shows those of its
    violations alone, :func:`with_interval`; tens of thousands of checks cost a minute)."""
    checked = measure(found, rules, method, intervals)
    return [checked.check(i) for i in range(len(checked))], checked.unchecked


@dataclass
class Checked:
    """Every check's numbers as columns (:mod:`commstack.stats`), a :class:`Check` made only
    for those asked for: a report of 100,000 records makes some 400,000 checks and shows its
    violations alone."""

    pending: List[Tuple[Setting, Guideline, int, List[float], List[float]]]
    collectives: stats.Centers
    compositions: stats.Centers
    shifts: stats.Shifts
    adjusted: List[float]
    verdicts: List[str]
    intervals: bool
    unchecked: List[str]

    def __len__(self) -> int:
        return len(self.pending)

    def check(self, i: int) -> Check:
        setting, rule, m, lhs, composed = self.pending[i]
        return Check(setting, rule, m, self.collectives.center(i), self.compositions.center(i),
                     self.shifts.shift(i), self.verdicts[i], self.adjusted[i],
                     None if self.intervals else (composed, lhs))

    def violations(self) -> List[Check]:
        return [self.check(i) for i, v in enumerate(self.verdicts) if v == stats.WORSE]

    def setting_count(self) -> int:
        return len({id(p[0]) for p in self.pending})

    def names(self) -> set:
        return {p[1].name for p in self.pending}


def measure(found: Sequence[Setting], rules: Sequence[Guideline], method: str = METHOD,
            intervals: bool = True) -> Checked:
    """:func:`check`'s checks as :class:`Checked`."""
    pending: List[Tuple[Setting, Guideline, int, List[float], List[float]]] = []
    for setting in found:
        by_name: Dict[str, List[Tuple[int, List[float]]]] = {}  # each collective's sizes, sorted
        for (name, m), lhs in sorted(setting.samples.items()):
            if lhs:
                by_name.setdefault(name, []).append((m, lhs))
        for rule in rules:
            for m, lhs in by_name.get(rule.collective.collective, ()):
                parts = []
                for term in rule.composition:
                    size = term.bytes(m, setting.processes)
                    parts.append(setting.samples.get((term.collective, size)) if size else None)
                if not all(parts):
                    continue
                composed = array("d", map(sum, zip(*parts)))
                pending.append((setting, rule, m, lhs, composed))
    # The numbers of every check at once (commstack.stats, with NumPy per sample size).
    shifts = stats.shift_columns([(p[4], p[3]) for p in pending], interval=intervals)
    adjusted = stats.corrected_columns(shifts, method)
    used = {p[1].name for p in pending}
    return Checked(pending, stats.describe_columns([p[3] for p in pending]),
                   stats.describe_columns([p[4] for p in pending]), shifts, adjusted.tolist(),
                   stats.calls(shifts.ratio, adjusted, shifts.testable), intervals,
                   [r.name for r in rules if r.name not in used])


def _center(c: stats.Center) -> str:
    if c.low is None:
        return f"{c.median:.3g} (n={c.n})"
    return f"{c.median:.3g} [{c.low:.3g}–{c.high:.3g}] (n={c.n})"


Checks = Union[Sequence[Check], Checked]


def violations(checks: Checks) -> List[Check]:
    """The checks whose collective :mod:`commstack.stats` calls slower than the composition."""
    if isinstance(checks, Checked):
        return checks.violations()
    return [c for c in checks if c.verdict == stats.WORSE]


def _setting_count(checks: Checks) -> int:
    if isinstance(checks, Checked):
        return checks.setting_count()
    return len({id(c.setting) for c in checks})


def _names(checks: Checks) -> set:
    if isinstance(checks, Checked):
        return checks.names()
    return {c.guideline.name for c in checks}


def evidence_table(checks: Sequence[Check], method: str = METHOD) -> List[str]:
    """Markdown rows of checks with their evidence: both medians with their intervals, the
    ratio with its bootstrap interval, the corrected p and the verdict of :mod:`commstack.stats`."""
    name = {"bh": "BH", "holm": "Holm"}[method]
    body = []
    for c in checks:
        sizes = " + ".join(f"{t.collective}({t.bytes(c.m, c.setting.processes)} B)"
                           for t in c.guideline.composition)
        body.append([c.setting.label, c.guideline.rule, c.m, _center(c.collective),
                     f"{sizes}: {_center(c.composition)}",
                     f"{c.shift.ratio:.2f} [{c.shift.low:.2f}–{c.shift.high:.2f}]",
                     f"{c.p_adjusted:.2g}", c.verdict])
    return table(["setting", "guideline", "m [bytes]", "collective", "composition",
                  "ratio [interval]", f"p ({name})", "verdict"], body, align="llrllrrl")


def summary(checks: Checks, method: str = METHOD) -> str:
    """How many checks, settings and violations, and by which rule, in one sentence."""
    found = violations(checks)
    return (f"{len(checks)} checks in {_setting_count(checks)} settings; "
            f"{len(found)} violations: the collective slower than a composition that "
            f"does the same job. Verdicts: {stats.rule_text(method=method)}. "
            "Times in usec: median [95 % interval] (n samples); ratio: collective / "
            "composition with its bootstrap interval.")


NOTHING_CHECKED = ("No guideline could be checked: no setting measured a collective and the "
                   "composition of a guideline at matching sizes (see "
                   "`src/commstack/report/guidelines.tsv`).")
NO_VIOLATION = "No violation found beyond noise."


def lines(checks: Checks, unchecked: Sequence[str], rules: Sequence[Guideline],
          method: str = METHOD) -> List[str]:
    """The report section."""
    out = ["", "## Self-consistent performance guidelines", ""]
    if not checks:
        return out + [NOTHING_CHECKED]
    found = violations(checks)
    out += [summary(checks, method), ""]
    if found:
        out += evidence_table([with_interval(c) for c in found], method)
        out.append("")
        out.append("A violation names an algorithm choice to tune at those sizes: the "
                   "composition is a way the library could have done the same job faster.")
    else:
        out.append(NO_VIOLATION)
    return out + sources(checks, unchecked, rules)


def sources(checks: Checks, unchecked: Sequence[str],
            rules: Sequence[Guideline]) -> List[str]:
    """The guidelines checked, each with its source, and those nothing could check."""
    by_name = {r.name: r for r in rules}
    out = ["", "Guidelines checked: " + "; ".join(
        f"`{by_name[n].rule}` ({by_name[n].source})" for n in
        sorted(_names(checks)))]
    if unchecked:
        out.append("Not checked (collectives or sizes not measured in one setting): "
                   + ", ".join(f"`{by_name[n].rule}`" for n in unchecked) + ".")
    return out


def section(records: Sequence[Record],
            output: Callable[[Record], Optional[str]] = lambda r: None,
            rows: Callable[[Record], List[dict]] = lambda r: r.parsed,
            entries: Optional[Callable[[Record], Sequence[Entry]]] = None,
            layout: Optional[Callable[[Record], Optional[Layout]]] = None) -> List[str]:
    """The guidelines section of a campaign's report (no lines when it timed no collectives);
    ``output``, ``rows``, ``entries`` and ``layout`` as for :func:`settings`."""
    rules = read_guidelines()
    found = settings(relevant(records, rules), output, rows, entries, layout)
    if not found:
        return []
    mark_simulated(found, records)
    checked = measure(found, rules, intervals=False)
    return lines(checked, checked.unchecked, rules)


# --- a campaign's stored runs -------------------------------------------------------------------


def _folder(campaign: Campaign, record: Record) -> Path:
    return campaign.point_dir(record.point_id) / f"rep{record.repeat}.try{record.attempt}"


def stored_rows(campaign: Campaign, record: Record) -> List[dict]:
    """The record's rows, read again from its record.json when the record holds none (a report
    keeps the rows of only the records its sections need)."""
    if record.parsed:
        return record.parsed
    try:
        return Record.load(_folder(campaign, record) / "record.json").parsed
    except (OSError, RecordError):
        return []


def stored_output(campaign: Campaign, record: Record) -> Optional[str]:
    """The run's stdout (ReproMPI's per-call samples); None when missing or too large."""
    path = _folder(campaign, record) / (record.stdout or "stdout.txt")
    try:
        if path.stat().st_size > MAX_OUTPUT:
            return None
        return path.read_text(errors="replace")
    except OSError:
        return None


def campaign_section(campaign: Campaign, records: Sequence[Record]) -> List[str]:
    """The report section of a campaign whose (run, not published) records are ``records``."""
    return section(records, lambda r: stored_output(campaign, r),
                   lambda r: stored_rows(campaign, r))


def campaign_settings(campaign: Campaign, rules: Sequence[Guideline],
                      source: str = "") -> List[Setting]:
    """The collective timings of a campaign's runs by setting, as its report checks them;
    ``source`` names the campaign in each setting's label."""
    records = [r for r in campaign.records() if not r.published]
    found = settings(relevant(records, rules), lambda r: stored_output(campaign, r),
                     lambda r: stored_rows(campaign, r))
    mark_simulated(found, records)
    for setting in found:
        setting.source = source
    return found


def mark_simulated(found: Sequence[Setting], records: Sequence[Record]) -> None:
    """Each setting of a stack whose runs were simulated names its platform (its label then
    says ``(simulated)``): a stack's runs are all simulated or all measured."""
    stacks = {r.stack or "": platform(r.simulation) for r in records if r.simulation}
    for setting in found:
        setting.simulated = stacks.get(setting.stack)


def applies(record: Record) -> bool:
    return _family(record) is not None
