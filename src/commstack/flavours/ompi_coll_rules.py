"""Open MPI coll/tuned's dynamic rules file: the per-size form of ``coll_tuned_<op>_algorithm``.

A matrix or a tuner's verify gives ``mca.coll_tuned_<op>_algorithm`` a per-size value, the
algorithm per range of message sizes in the form Intel MPI uses for ``I_MPI_ADJUST_<OP>``:
``"3:0-1023;4:1024-"`` (algorithm 3 from 0 to 1023 bytes, 4 from 1024 bytes on; a range's end
is inclusive, the last may be open). Sizes are the benchmark's own ``#bytes``: for alltoall,
allgather, gather and scatter the bytes each process sends to (or gathers from) one process.
Sizes no range covers get algorithm 0, Open MPI's own choice. At launch the value becomes a
rules file written into the run's directory, with ``OMPI_MCA_coll_tuned_use_dynamic_rules=1``
and ``OMPI_MCA_coll_tuned_dynamic_rules_filename`` naming it; the forced variable of that
collective is not set (it takes one number, and the file's rules take precedence over it).

What Open MPI 4.1 does with the file (read from 4.1.4's source):

* ``ompi/mca/coll/tuned/coll_tuned_component.c``: the file named by
  ``coll_tuned_dynamic_rules_filename`` is read once, at start-up, when
  ``coll_tuned_use_dynamic_rules`` is true.
* ``ompi/mca/coll/tuned/coll_tuned_dynamic_file.c`` and ``ompi/mca/coll/base/coll_base_util.c``
  (``ompi_coll_base_file_getnext_long``): whitespace-separated integers read by ``fscanf("%li")``
  (so never a leading zero: ``010`` would be 8), ``#`` starts a comment to the end of the line.
  The number of collectives; per collective its ID (``enum COLLTYPE``,
  ``ompi/mca/coll/base/coll_base_functions.h``) and the number of communicator sizes; per
  communicator size the size and the number of message sizes; per message size
  ``msg_size algorithm faninout segsize``. The first message rule must be size 0. Any error
  discards the whole file and Open MPI goes back to its fixed decisions, silently in a release
  build (OPAL_OUTPUT is compiled in debug builds only).
* ``ompi/mca/coll/tuned/coll_tuned_dynamic_rules.c``: a communicator takes the rule of the
  largest listed communicator size not above its own (the first one also serves smaller
  communicators); a call takes the message rule with the largest ``msg_size`` not above its
  size. Algorithm 0 means no rule: the forced algorithm, else the fixed decision.
* ``ompi/mca/coll/tuned/coll_tuned_decision_dynamic.c``: the size a rule is compared with is
  datatype size x count for allreduce, bcast and reduce, datatype size x the sum of the receive
  counts for reduce_scatter (the whole vector, as IMB counts it), and datatype size x count x
  communicator size for alltoall, allgather, gather and scatter (scatter's from each rank's own
  send count, which MPI makes significant at the root only; IMB passes the same on every rank).
  Their forced algorithm gets the collective's ``..._algorithm_tree_fanout`` (allreduce,
  alltoall, allgather, gather) or ``..._chain_fanout`` (bcast, reduce, reduce_scatter, scatter),
  default ``coll_tuned_init_tree_fanout``/``init_chain_fanout`` = 4, and
  ``..._algorithm_segmentsize`` (default 0); the file's rules get the same values here, so a
  band's algorithm runs as the step measured it. ``max_requests`` has no column in the file
  (``coll_tuned_dynamic_rules.c`` sets it to 0), so alltoall's and reduce's request limit is
  not the forced path's.

Communicator sizes written: one rule for the byte-counted collectives (it serves every
communicator); for the collectives counted times the communicator size, the launch's rank
count and every power of two below it, each with the ranges' sizes multiplied by that size, so
the per-process boundaries are exact there (what the tuner measured is the launch's size); a
communicator of another size takes the next smaller listed one, its per-process boundaries
then at most a factor 2 lower.

Evidence: a release build prints nothing when it reads, uses or discards the file, so a run's
record says its use could not be checked. An algorithm number the collective does not have
makes the call fail with ``MPI_ERR_ARG`` exactly at the sizes its rule covers; the tests use
that to prove the file is read and its boundaries are where this module puts them
(tests/test_ompi_coll_rules.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from commstack.flavours.base import FlavourError, RunFile

MCA = "OMPI_MCA_"
USE_RULES = MCA + "coll_tuned_use_dynamic_rules"
RULES_FILE = MCA + "coll_tuned_dynamic_rules_filename"
FILE_NAME = "coll_tuned_rules.conf"  # in the run's directory, and in a tuning's tuned/
_ALGORITHM = re.compile(r"^coll_tuned_(?P<op>[a-z_]+)_algorithm$")
_RANGE = re.compile(r"^(?P<alg>\d+):(?P<first>\d+)-(?P<last>\d*)$")
TRUE = ("1", "true", "yes", "on", "enabled")
DEFAULT_FANOUT = "4"  # coll_tuned_init_tree_fanout and init_chain_fanout (coll_tuned_component.c)


@dataclass(frozen=True)
class Collective:
    op: str  # as in the MCA parameter coll_tuned_<op>_algorithm
    ident: int  # enum COLLTYPE
    times_comm_size: bool  # the rule compares datatype size x count x communicator size
    fanout: str  # "tree" or "chain": the fan-in/out its forced algorithm gets


COLLECTIVES: Dict[str, Collective] = {c.op: c for c in (
    Collective("allgather", 0, True, "tree"),
    Collective("allreduce", 2, False, "tree"),
    Collective("alltoall", 3, True, "tree"),
    Collective("bcast", 7, False, "chain"),
    Collective("gather", 9, True, "tree"),
    Collective("reduce", 11, False, "chain"),
    Collective("reduce_scatter", 12, False, "chain"),
    Collective("scatter", 15, True, "chain"),
)}

# What coll_tuned_decision_dynamic.c compares for the others, and why no per-size value fits.
REFUSED = {
    "allgatherv": "its rule compares the mean bytes per rank of the receive counts",
    "alltoallv": "its rule always takes the first message rule (it compares no size)",
    "barrier": "it has no message size",
    "exscan": "its rule compares datatype size x communicator size, never the count",
    "scan": "its rule compares datatype size x communicator size, never the count",
    "reduce_scatter_block": "its rule compares datatype size x count x communicator size, "
                            "and which benchmark size that is has not been checked",
}


@dataclass(frozen=True)
class Range:
    algorithm: int
    first: int  # bytes, as the benchmark counts them
    last: Optional[int]  # inclusive; None: every larger size too


def operation(name: str) -> Optional[str]:
    """``allreduce`` for ``coll_tuned_allreduce_algorithm`` (the MCA name, no prefix), else None."""
    m = _ALGORITHM.match(name)
    return m["op"] if m else None


def is_per_size(value: object) -> bool:
    """A per-size value, as opposed to one algorithm number (or name)."""
    return ":" in str(value)


def parse(text: str) -> List[Range]:
    """The ranges of a per-size value; ValueError says what is wrong with it."""
    ranges: List[Range] = []
    tokens = [t.strip() for t in str(text).split(";")]
    for i, token in enumerate(tokens):
        m = _RANGE.match(token)
        if m is None:
            raise ValueError(f"{token!r} is not <algorithm>:<first>-<last> (e.g. 3:0-1023;4:1024-)")
        last = int(m["last"]) if m["last"] else None
        item = Range(int(m["alg"]), int(m["first"]), last)
        if last is None and i != len(tokens) - 1:
            raise ValueError(f"only the last range may be open-ended, not {token!r}")
        if last is not None and last < item.first:
            raise ValueError(f"{token!r} ends before it starts")
        if ranges and item.first <= ranges[-1].last:  # type: ignore[operator]
            raise ValueError(f"{token!r} does not start after the range before it "
                             "(ranges go up in size and do not overlap)")
        ranges.append(item)
    return ranges


def message_rules(ranges: List[Range]) -> List[Tuple[int, int]]:
    """(from size, algorithm) per rule, starting at 0; sizes no range covers get algorithm 0."""
    rules: List[Tuple[int, int]] = []

    def add(size: int, algorithm: int) -> None:
        if rules and rules[-1][0] == size:
            rules.pop()
        if not rules or rules[-1][1] != algorithm:
            rules.append((size, algorithm))

    if not ranges or ranges[0].first > 0:
        add(0, 0)
    for item in ranges:
        add(item.first, item.algorithm)
        if item.last is not None:
            add(item.last + 1, 0)
    return rules


def comm_sizes(ranks: int) -> List[int]:
    """The launch's rank count and every power of two below it."""
    sizes = [2 ** k for k in range(max(ranks, 1).bit_length()) if 2 ** k < ranks]
    return sizes + [max(ranks, 1)]


@dataclass(frozen=True)
class Choice:
    """One collective's per-size value, as a point sets it."""

    collective: Collective
    value: str
    ranges: Tuple[Range, ...]
    faninout: int
    segsize: int


def render(choices: List[Choice], ranks: int) -> str:
    """The rules file for ``choices`` on a launch of ``ranks`` processes."""
    lines = ["# Open MPI coll/tuned dynamic rules, written by commstack",
             "# (format: ompi/mca/coll/tuned/coll_tuned_dynamic_file.c in Open MPI 4.1).",
             f"# For {ranks} ranks, from:"]
    lines += [f"#   mca.coll_tuned_{c.collective.op}_algorithm = {c.value}" for c in choices]
    lines.append(f"{len(choices)}  # collectives")
    for c in choices:
        col = c.collective
        sizes = comm_sizes(ranks) if col.times_comm_size else [1]
        unit = ("datatype size x count x communicator size" if col.times_comm_size
                else "datatype size x count")
        lines += [f"{col.ident}  # {col.op}: message sizes are {unit}",
                  f"{len(sizes)}  # communicator sizes"]
        rules = message_rules(list(c.ranges))
        for size in sizes:
            scale = size if col.times_comm_size else 1
            lines += [f"{size}  # communicator size" + ("" if col.times_comm_size
                                                        else " (and every other)"),
                      f"{len(rules)}  # message sizes: from-size algorithm faninout segsize"]
            lines += [f"{first * scale} {alg} {c.faninout} {c.segsize}" for first, alg in rules]
    return "\n".join(lines) + "\n"


def _mca_name(variable: str) -> str:
    return "mca." + variable[len(MCA):]


def _integer(env: Dict[str, str], names: List[str], default: str) -> int:
    for name in names:
        if name in env:
            text = env[name].strip()
            if not text.isdigit():
                raise FlavourError(f"{_mca_name(name)}={env[name]!r} is not a whole number, "
                                   "and the coll/tuned rules file needs it as one")
            return int(text)
    return int(default)


def choice(variable: str, value: str, env: Dict[str, str]) -> Choice:
    """The checked per-size value of ``variable`` (OMPI_MCA_coll_tuned_<op>_algorithm)."""
    name = _mca_name(variable)
    op = operation(variable[len(MCA):]) or ""
    if op not in COLLECTIVES:
        why = REFUSED.get(op, "Open MPI 4.1's coll/tuned has no dynamic rule for it")
        raise FlavourError(f"{name}={value!r}: a per-size value is not supported for {op}: {why}")
    try:
        ranges = parse(value)
    except ValueError as exc:
        raise FlavourError(f"{name}={value!r}: {exc}") from None
    col = COLLECTIVES[op]
    fanout = _integer(env, [f"{MCA}coll_tuned_{op}_algorithm_{col.fanout}_fanout",
                            f"{MCA}coll_tuned_init_{col.fanout}_fanout"], DEFAULT_FANOUT)
    segsize = _integer(env, [f"{MCA}coll_tuned_{op}_algorithm_segmentsize"], "0")
    return Choice(col, value, tuple(ranges), fanout, segsize)


def launch_files(env: Dict[str, str], ranks: int) -> Tuple[Dict[str, str], Tuple[RunFile, ...]]:
    """``env`` with its per-size ``coll_tuned_<op>_algorithm`` values replaced by one rules file
    (written into the run's directory at launch) and the variables that make Open MPI read it;
    FlavourError, naming the parameter, for a value or combination that cannot be launched."""
    per_size = {k: v for k, v in env.items()
                if k.startswith(MCA) and operation(k[len(MCA):]) and is_per_size(v)}
    if not per_size:
        return env, ()
    shown = ", ".join(f"{_mca_name(k)}={v!r}" for k, v in sorted(per_size.items()))
    if RULES_FILE in env:
        raise FlavourError(f"{shown} is launched as a rules file of commstack's, but "
                           f"{_mca_name(RULES_FILE)} names one of its own; set one or the other")
    if USE_RULES in env and env[USE_RULES].strip().lower() not in TRUE:
        raise FlavourError(f"{shown} needs coll/tuned's rules file, which "
                           f"{_mca_name(USE_RULES)}={env[USE_RULES]!r} turns off")
    choices = [choice(k, v, env) for k, v in sorted(per_size.items())]
    out = {k: v for k, v in env.items() if k not in per_size}
    out[USE_RULES] = "1"
    out[RULES_FILE] = FILE_NAME
    note = (f"{shown} launched as Open MPI coll/tuned's rules file {FILE_NAME} (beside this "
            f"run's outputs; {RULES_FILE} names it); that Open MPI read it could not be checked: "
            "a release build prints nothing when it reads or discards the file")
    return out, (RunFile(FILE_NAME, render(choices, ranks), RULES_FILE, note),)
