"""One results store across campaigns and machines: every campaign's tidy rows (its Parquet index,
``commstack.store.tidy_index``) joined with what identifies each run over time, read by DuckDB.

Views of the connection ``open_store`` returns:

* ``rows``: the tidy rows of every campaign found (``tidy_index.COLUMNS``), each index brought up
  to date from its records first;
* ``runs``: one row per campaign, session and stack, read from ``sessions/<id>/provenance.json``
  and the stack's version file beside it: ``node_type`` (the CPU model and CPU count the session
  saw), ``hostname``, ``commstack_commit`` (``-dirty`` when the tree had changes),
  ``commstack_version``, ``flavour``, ``mpi_version`` (as the MPI's own tool printed it),
  ``spack_hash`` (of the stack's MPI package in its Spack view; null outside Spack);
* ``results``: ``rows`` left-joined with ``runs`` on campaign, machine, session and stack, plus
  ``date`` (the run's start, UTC) and ``origin`` ("measured"; "imported" for a campaign of
  ``commstack import``; "simulated" for a simulator's run, whose platform is in ``simulated``:
  ``commstack.simulated``). Imported rows have no session: their provenance fields are null,
  and published tables carry no run date either.

Nothing here is a second copy of the records: the indexes are derived from them (rebuilt when
missing or stale) and provenance is read where the sweep wrote it.

  from commstack.store.results import open_store
  con = open_store([Path("results")])
  con.execute("SELECT machine, stack, mpi_version, count(*) FROM results GROUP BY ALL")
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from commstack import flavours
from commstack.errors import CampaignError
from commstack.optional import require
from commstack.store import tidy_index
from commstack.store.campaign import campaigns_under

DUCKDB = ("duckdb", "query", "The results store")
# A provenance file larger than this is not one the sweep wrote (bounded reading).
MAX_PROVENANCE = 4 << 20
@dataclass
class Run:
    """What identifies one session's runs on one stack."""

    campaign: str
    machine: str
    session: str
    stack: str
    flavour: Optional[str]
    mpi_version: Optional[str]
    spack_hash: Optional[str]
    node_type: Optional[str]
    hostname: Optional[str]
    commstack_commit: Optional[str]
    commstack_version: Optional[str]


RUN_COLUMNS = tuple(Run.__dataclass_fields__)


def campaigns(paths: Sequence[Path]) -> List[Path]:
    """The campaigns at or below each path (results/, results/<machine>/ or a campaign)."""
    found: List[Path] = []
    for path in map(Path, paths):
        if not path.exists():
            raise CampaignError(f"{path}: no such campaign or folder")
        here = [path] if (path / "campaign.json").is_file() else campaigns_under(path)
        if not here:
            raise CampaignError(f"{path} holds no campaign (no campaign.json below it)")
        found += [p for p in here if p not in found]
    return found


def runs_of(campaign_root: Path) -> List[Run]:
    """Every session and stack of one campaign, from the provenance the sweep saved."""
    root = Path(campaign_root)
    out: List[Run] = []
    for session in sorted((root / "sessions").glob("*/provenance.json")):
        info = _provenance(session)
        if info is None:
            continue
        cpu = info.get("cpu_model")
        cpus = info.get("cpus_available")
        node = f"{cpu} ({cpus} CPUs)" if cpu and cpus else cpu
        for stack, desc in sorted((info.get("stacks") or {}).items()):
            desc = desc if isinstance(desc, dict) else {}
            flavour = desc.get("flavour")
            out.append(Run(
                campaign=root.name, machine=root.parent.name, session=session.parent.name,
                stack=stack, flavour=flavour,
                mpi_version=_mpi_version(session.parent, stack, flavour),
                spack_hash=_spack_hash(desc.get("spack"), flavour), node_type=node,
                hostname=_text(info.get("hostname")),
                commstack_commit=_text(info.get("git_commit")),
                commstack_version=_text(info.get("commstack_version"))))
    return out


def _provenance(path: Path) -> Optional[Dict[str, Any]]:
    try:
        if path.stat().st_size > MAX_PROVENANCE:
            return None
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None  # not written by the sweep: its runs stay, without provenance
    return data if isinstance(data, dict) else None


def _text(value: Any) -> Optional[str]:
    return None if value is None else str(value)[:200]


def _mpi_version(session: Path, stack: str, flavour: Optional[str]) -> Optional[str]:
    """The MPI version the flavour's version tool saved beside the session's provenance."""
    for tool in _flavour(flavour).version_tools:
        if not tool.version:
            continue
        try:
            with open(session / f"{stack}.{tool.file}", "rb") as handle:
                text = handle.read(1 << 16).decode(errors="replace")
        except OSError:
            continue
        found = tool.read_version(text)
        if found:
            return found
    return None


def _spack_hash(specs: Any, flavour: Optional[str]) -> Optional[str]:
    """The hash of the flavour's MPI among a stack's Spack specs."""
    if not isinstance(specs, list):
        return None
    names = _flavour(flavour).spack_packages
    for spec in specs:
        if isinstance(spec, dict) and spec.get("name") in names and spec.get("hash"):
            return str(spec["hash"])[:64]
    return None


def _flavour(name: Optional[str]) -> flavours.Flavour:
    """The flavour a provenance names (an unknown one: nothing is read for it)."""
    return flavours.FLAVOURS.get(name or "", flavours.Flavour())


def open_store(paths: Sequence[Path]):
    """A DuckDB connection with the views ``rows``, ``runs`` and ``results`` over every campaign
    at or below ``paths`` (each index made complete first)."""
    duckdb = require(*DUCKDB)
    pa = require(*tidy_index.PYARROW)
    roots = campaigns(paths)
    files = tidy_index.part_files(roots)
    if not files:
        raise CampaignError("no records in " + ", ".join(map(str, paths)) + " yet")
    con = duckdb.connect()
    listed = ", ".join("'" + str(f).replace("'", "''") + "'" for f in files)
    con.execute(f"CREATE VIEW rows AS SELECT * FROM read_parquet([{listed}])")
    found = [asdict(run) for root in roots for run in runs_of(root)]
    table = pa.Table.from_pylist(found, schema=pa.schema([(c, pa.string()) for c in RUN_COLUMNS]))
    con.register("runs_table", table)
    con.execute("CREATE VIEW runs AS SELECT * FROM runs_table")
    extra = ", ".join(f"u.{c}" for c in RUN_COLUMNS if c not in ("campaign", "machine", "session",
                                                                  "stack"))
    con.execute(f"""
        CREATE VIEW results AS
        SELECT r.*, {extra},
               to_timestamp(r.start) AS date,
               CASE WHEN r.imported THEN 'imported'
                    WHEN r.simulated IS NOT NULL THEN 'simulated'
                    ELSE 'measured' END AS origin
        FROM rows r LEFT JOIN runs u
          ON r.campaign = u.campaign AND r.machine = u.machine AND r.session = u.session
             AND r.stack = u.stack""")
    return con
