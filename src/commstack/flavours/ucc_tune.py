"""UCC's ``UCC_TL_UCP_TUNE``: checked before launch, and written per message size from bands.

Syntax (openucx/ucc ``docs/user_guide.md``, "CLs and TLs"): ``<token>#<token>...``, a token
being ``:``-separated qualifiers in any order, each optional, ``score`` or ``@alg`` required:
collective types (``allreduce,bcast``), message ranges in bytes (``0-4K,1M-inf``; K, M, G, T
binary prefixes, an optional ``b``, case-insensitive), memory types (``host,cuda``), team sizes
(``[2-8,16]``), a score (``0``..``inf``) and ``@<id|name>`` (TL/UCP's algorithms: ``ucc_info -A``).

What UCC 1.3.0 does with message ranges (read from its source, tag v1.3.0):

* ``src/coll_score/ucc_coll_score.c`` (``ucc_coll_score_parse_str``, ``coll_score_add_range``):
  a range whose start is not below its end is invalid, and ranges of one collective that overlap
  make UCC fail the whole variable ("attempt to add overlaping range"). ``ucc_coll_score_update``
  lays the ranges over TL/UCP's defaults (allreduce: ``0-4k:@0``, ``4k-inf:@1``); a token with
  only ``@alg`` keeps the default's score; sizes between two given ranges keep the default.
* ``src/coll_score/ucc_coll_score_map.c``: a call takes the range with ``start <= size <= end``
  (both inclusive), and where one range ends at the size the next starts with
  (``build_map``), that size goes to the higher score, on a tie to the upper range. So
  ``0-1024:@0#1024-inf:@1`` gives 0..1023 to @0 and 1024 on to @1, exactly; written with
  inclusive ends, ``0-1023:@0#1024-inf:@1`` leaves 1023..1024 to the default, and UCC's own
  score map (``UCC_LOG_LEVEL=info``) then shows @0's range ending at 1022 (checked on the local
  UCC 1.3.0). This module writes the shared-boundary form.
* ``src/utils/ucc_coll_utils.c`` (``ucc_coll_args_msgsize``): the size compared is the count
  times the datatype size for allreduce, bcast and reduce (what IMB calls ``#bytes``), but the
  whole receive buffer (per-process bytes times the team size) for alltoall and allgather, and
  for gather and scatter it differs between root and the others; alltoallv, gatherv, scatterv
  compare no size. Per-size values are therefore written for :data:`BYTE_COUNTED` as IMB counts
  sizes, and for :data:`WHOLE_BUFFER` only for one team size: each range multiplied by the
  process count the tuning ran at, behind UCC's team-size qualifier (``alltoall:[2]:0-2048:...``,
  IMB's 1024 B on 2 ranks; UCC applies the token to teams of that size alone). Checked on the
  local UCC 1.3.0: an IMB Alltoall of 256 B on 2 ranks is traced as ``src={..., 512, uint8}``,
  and ``alltoall:[2]:0-2048:@pairwise#alltoall:[2]:2048-inf:@bruck`` puts the score map's
  boundary at 2K, while the same ranges for ``[4]`` leave a 2-rank team's map as it was.

Evidence: UCC's ``UCC_COLL_TRACE=info`` names the TL per call (``CL_BASIC {TL_UCP}``), never
the algorithm, and TL/UCP logs none; ``UCC_LOG_LEVEL=info`` prints the score map at team
creation, whose ranges show where the boundaries are (tests/test_ucc_tune.py).
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional, Tuple

from commstack.flavours.base import FlavourError

VARIABLE = "UCC_TL_UCP_TUNE"
# ucc_coll_type_from_str (src/utils/ucc_coll_utils.c): the names UCC takes, lower case.
COLL_TYPES = ("allgather", "allgatherv", "allreduce", "alltoall", "alltoallv", "barrier",
              "bcast", "fanin", "fanout", "gather", "gatherv", "reduce", "reduce_scatter",
              "reduce_scatterv", "scatter", "scatterv")
# ucc_mem_type_from_str (src/utils/ucc_coll_utils.c, v1.3.0): "host", not the guide's "cpu".
MEM_TYPES = ("host", "cuda", "cuda_managed", "rocm", "rocm_managed")
BYTE_COUNTED = ("allreduce", "bcast", "reduce")  # msgsize = count x datatype size on every rank
WHOLE_BUFFER = ("alltoall", "allgather")  # msgsize = the receive buffer: IMB's bytes x processes
_SIZE = re.compile(r"^(?P<n>\d+)(?P<unit>[kmgt]?)b?$", re.I)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_TEAM = re.compile(r"^\[(\d+(-(\d+|inf))?)(,\d+(-(\d+|inf))?)*\]$", re.I)
INF = None  # the open end of a range


def size(text: str) -> Optional[int]:
    """Bytes of a UCC size (``4K``, ``256b``), None for ``inf``; ValueError otherwise."""
    if text.strip().lower() == "inf":
        return INF
    m = _SIZE.match(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a size in bytes (e.g. 1024, 4K, 1M, inf)")
    return int(m["n"]) * _UNITS[m["unit"].lower()]


def _ranges(field: str) -> Optional[List[Tuple[int, Optional[int]]]]:
    """The message ranges of a qualifier, or None when it is not one."""
    if "-" not in field or field.startswith("["):
        return None
    out = []
    for part in field.split(","):
        ends = part.split("-")
        if len(ends) != 2:
            raise ValueError(f"{part!r} is not a message range <start>-<end> (e.g. 0-4K)")
        first, last = size(ends[0]), size(ends[1])
        if first is None:
            raise ValueError(f"{part!r} starts at inf")
        if last is not None and last <= first:
            raise ValueError(f"{part!r} does not end after it starts (UCC refuses it)")
        out.append((first, last))
    return out


def token_fields(token: str) -> Dict[str, object]:
    """One token's qualifiers by kind (colls, ranges, mem, team, score, alg); ValueError names
    the qualifier UCC would not take."""
    fields: Dict[str, object] = {}
    for field in token.split(":"):
        low = field.strip().lower()
        kind: str
        if low and all(c in COLL_TYPES for c in low.split(",")):
            kind, value = "colls", low.split(",")
        elif low and all(m in MEM_TYPES for m in low.split(",")):
            kind, value = "mem", low.split(",")
        elif low == "inf" or low.isdigit():
            kind, value = "score", low
        elif low.startswith("@") and len(low) > 1:
            kind, value = "alg", field.strip()[1:]
        elif _TEAM.match(low):
            kind, value = "team", low
        else:
            found = _ranges(low)
            if found is None:
                raise ValueError(f"{field!r} in {token!r} is none of UCC's qualifiers (collective, "
                                 "message range, memory type, [team sizes], score, @algorithm)")
            kind, value = "ranges", found
        if kind in fields:
            raise ValueError(f"{token!r} gives the {kind} qualifier twice")
        fields[kind] = value
    if "score" not in fields and "alg" not in fields:
        raise ValueError(f"{token!r} has neither a score nor an @algorithm, which UCC requires")
    return fields


def check(value: str) -> List[Dict[str, object]]:
    """The tokens of a ``UCC_TL_UCP_TUNE`` value; ValueError says what UCC would refuse."""
    tokens = [token_fields(t) for t in str(value).split("#") if t.strip()]
    seen: Dict[Tuple[str, str], List[Tuple[int, Optional[int]]]] = {}
    for fields in tokens:
        if "ranges" not in fields:
            continue
        for coll in fields.get("colls", ["(every collective)"]):  # type: ignore[union-attr]
            for mem in fields.get("mem", ["(every memory type)"]):  # type: ignore[union-attr]
                have = seen.setdefault((coll, mem), [])
                for first, last in fields["ranges"]:  # type: ignore[union-attr]
                    for f2, l2 in have:
                        if (last is None or f2 < last) and (l2 is None or first < l2):
                            raise ValueError(f"the {coll} ranges {_show(f2, l2)} and "
                                             f"{_show(first, last)} overlap (UCC refuses it)")
                    have.append((first, last))
    return tokens


def _show(first: int, last: Optional[int]) -> str:
    return f"{first}-{'inf' if last is None else last}"


def check_env(env: Dict[str, str]) -> None:
    """FlavourError, naming the parameter, for a ``UCC_TL_UCP_TUNE`` UCC would not take."""
    value = env.get(VARIABLE)
    if value is None or not value.strip():
        return
    try:
        check(value)
    except ValueError as exc:
        raise FlavourError(f"env.{VARIABLE}={value!r}: {exc}") from None


def single_algorithm(value: str) -> Optional[Tuple[str, List[str]]]:
    """(collective, the token's fields) of a one-token, one-collective value with an @algorithm
    and no message range (``allreduce:@knomial``), else None."""
    try:
        tokens = check(value)
    except ValueError:
        return None
    if len(tokens) != 1 or "alg" not in tokens[0] or "ranges" in tokens[0]:
        return None
    colls = tokens[0].get("colls") or []
    if len(colls) != 1:  # type: ignore[arg-type]
        return None
    fields = [f.strip() for f in value.split("#")[0].split(":") if f.strip()]
    return colls[0], fields  # type: ignore[index]


def per_size(pieces: List[Tuple[Optional[str], int, Optional[int]]],
             processes: Optional[int] = None) -> Optional[str]:
    """``(value or None, first, end)`` per run of sizes (bytes as IMB prints them), in order,
    each value a single-algorithm token of one collective, as one value: each token gets its
    range ``<first>-<end>`` (``end`` the next run's first size, the boundary UCC gives to the
    upper range; ``inf`` for the last), after its collective; None (UCC's own choice) adds no
    token. A :data:`WHOLE_BUFFER` collective needs the ``processes`` the sizes were measured at:
    its ranges are multiplied by it, behind the team-size qualifier ``[processes]``. None when
    there is nothing per size to say or a value does not fit."""
    if len({v for v, _, _ in pieces}) < 2:
        return None
    colls, out = set(), []
    for value, first, end in pieces:
        if value is None:
            continue
        found = single_algorithm(value)
        if found is None or found[0] not in BYTE_COUNTED + WHOLE_BUFFER:
            return None
        coll, fields = found
        qualifiers = [_show(first, end)]
        if coll in WHOLE_BUFFER:
            if not processes or processes < 1 or any(f.startswith("[") for f in fields):
                return None
            qualifiers = [f"[{processes}]",
                          _show(first * processes, None if end is None else end * processes)]
        colls.add(coll)
        at = next(i for i, f in enumerate(fields) if f.lower() == coll) + 1
        out.append(":".join(fields[:at] + qualifiers + fields[at:]))
    if len(colls) != 1 or not out:
        return None
    text = "#".join(out)
    check(text)
    return text


def notes(env: Dict[str, str]) -> List[str]:
    """What a run's record says of a per-size ``UCC_TL_UCP_TUNE`` (one with message ranges)."""
    value = env.get(VARIABLE, "")
    try:
        per_size_value = any("ranges" in t for t in check(value)) if value.strip() else False
    except ValueError:
        return []
    if not per_size_value:
        return []
    return [f"{VARIABLE}={value!r} chooses TL/UCP algorithms per message size; which algorithm "
            "served each call could not be checked (UCC 1.3.0 names the TL per call, never the "
            "algorithm; its score map at UCC_LOG_LEVEL=info shows the ranges)"]
