"""Helpers for tests that run real sweeps through the `commstack` command."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import List

import jsonschema

from commstack.store.campaign import Campaign
from commstack.store.record import Record, schema

RECORD_SCHEMA = schema()

# Two repeats of two points, one of which IMB refuses (an unknown benchmark name): a campaign
# with 2 done and 2 failed runs, for tests of status, reports and dashboards.
HALF_FAILING_MATRIX = """\
benchmark: imb-mpi1
repeats: 2
timeout: 120
stacks:
  impi: {flavour: intelmpi, prefix: "${I_MPI_ROOT}"}
parameters: {ranks_per_node: 2, msglog: "0:2", iter: 10}
product:
  benchmarks: [PingPong, PingPong NoSuchBench]
"""


def commstack(*args: str, timeout: float = 600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "commstack", *args], capture_output=True,
                          text=True, timeout=timeout, **kw)


def records_csv(root: Path) -> str:
    """records.csv of a campaign, as a user gets it: `commstack query CAMPAIGN --records`."""
    done = commstack("query", str(root), "--records")
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "commstack", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def records(root: Path) -> List[dict]:
    """The campaign's records in their written form (schema 2; older records upgraded on read),
    each checked against the record's JSON Schema: every sweep test checks what it wrote."""
    found = [record.to_dict() for record in Campaign(root).records()]
    for data in found:
        jsonschema.validate(data, RECORD_SCHEMA)
    return found


LAUNCHER_NAMES = ("true", "mpirun", "mpiexec", "mpiexec.hydra", "mpirun.openmpi", "mpiexec.mpich",
                  "srun")


def launcher_stand_ins(folder: Path) -> Path:
    """A folder of links to `true` named like the launchers, for tests that only *plan* (resolve
    names, launch nothing) on machines without MPIs or Slurm; a stack's `bin` is searched first."""
    import shutil

    folder.mkdir(parents=True, exist_ok=True)
    for name in LAUNCHER_NAMES:
        if not (folder / name).exists():
            (folder / name).symlink_to(shutil.which("true"))
    return folder


def run_allreduce_axis(tmp_path: Path, axis: str, values: List[str]) -> subprocess.CompletedProcess:
    """`commstack run` of an Open MPI IMB Allreduce matrix sweeping ``axis`` over ``values``,
    launchers and IMB stood in by `true` (a value refused before launch never reaches them)."""
    import json
    import shutil

    bin_dir = launcher_stand_ins(tmp_path / "bin")
    (bin_dir / "IMB-MPI1").symlink_to(shutil.which("true"))
    matrix = tmp_path / "matrices" / "local" / "bad.yaml"
    matrix.parent.mkdir(parents=True)
    matrix.write_text("benchmark: imb-mpi1\n"
                      f"stacks: {{o: {{flavour: openmpi, launcher: mpirun.openmpi, bin: {bin_dir}}}}}\n"
                      "parameters: {ranks_per_node: 2, benchmarks: Allreduce}\n"
                      f"product: {{{axis}: {json.dumps(values)}}}\n")
    return commstack("run", str(matrix), "--out", str(tmp_path / "results"))


def typed_records(root: Path) -> List[Record]:
    """The campaign's records as the code reads them (commstack.store.record.Record)."""
    return list(Campaign(root).records())


def ok_counts(root: Path) -> Counter:
    """How many successful records each (point, repeat) has: 1 everywhere means none lost or
    duplicated."""
    return Counter((r["point_id"], r["repeat"]) for r in records(root) if r["status"] == "ok")


def processes_under(directory: Path) -> List[int]:
    """PIDs whose working directory lies in `directory` (the runner starts jobs there)."""
    found = []
    target = str(directory.resolve())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if cwd.startswith(target):
            found.append(int(entry.name))
    return found


def delayed_imb_bin(directory: Path, impi_root: Path, seconds: float) -> Path:
    """A bin directory whose IMB-MPI1 is Intel MPI's real one, started after `seconds` of sleep:
    for tests that need a run to last at least that long on any machine."""
    directory.mkdir()
    wrapper = directory / "IMB-MPI1"
    wrapper.write_text(f'#!/bin/sh\nsleep {seconds:g}\nexec {impi_root}/bin/IMB-MPI1 "$@"\n')
    wrapper.chmod(0o755)
    return directory
