"""Capture a machine's facts on the machine and propose them for its site config.

`commstack machine capture [MACHINE]` reads what `machine check` reads (hwloc or lscpu, OS
release and glibc, the Slurm version and `srun --mpi=list`, RDMA devices and libfabric providers,
kernel modules, environment modules, the launchers' PMI libraries, every external's version)
and what `spack external find` detects of the MPI/UCX/UCC/HCOLL/PMIx/Slurm installs, then prints
the proposed machine.yaml and packages.yaml as a unified diff against the committed ones (each
captured value with a comment naming host, date and command). Run it on a login node and inside
an allocation (node layout, kernel modules and devices are the compute node's only there).
--out DIR writes the proposal (machine.yaml, packages.yaml), provenance.yaml (every captured
value with host, date and command) and capture.diff; `commstack machine check DIR/machine.yaml`
checks it. Nothing of $HOME and no environment variable is written.

exit status: 0 the machine agrees with the committed files, 1 a captured value differs (the
diff), 2 a user error, 5 this host is not MACHINE (nothing read).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import List

import yaml


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("capture", help="read this machine's facts and propose machine.yaml and "
                       "packages.yaml (a diff)", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("machine", nargs="?", default=None,
                   help="a name under site-configs/ or a path to a machine.yaml (default: the "
                        "site config whose verify.this_machine matches this host, else local)")
    p.add_argument("--packages", type=Path, default=None,
                   help="packages.yaml with the Spack externals (default: beside machine.yaml)")
    p.add_argument("--out", type=Path, default=None,
                   help="write the proposal, provenance.yaml and capture.diff into DIR")
    p.add_argument("--no-spack", action="store_true",
                   help="skip `spack external find` (it takes a minute or more)")


def _table(rows: List[List[str]]) -> List[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]


def _cut(value: object, width: int = 40) -> str:
    from commstack.machine.check.checks import show

    text = show(value)
    return text if len(text) <= width else text[:width - 1] + "…"


def _label(folder: Path) -> str:
    """site-configs/<m> for a committed config, else the folder (~ for $HOME)."""
    from commstack.cli.machine_choice import SITE_CONFIGS
    from commstack.machine.capture.readings import scrub

    try:
        return str(folder.resolve().relative_to(SITE_CONFIGS.parent))
    except ValueError:
        return scrub(str(folder))


def execute(args: argparse.Namespace) -> int:
    from commstack.cli.machine_choice import default_machine, resolve
    from commstack.machine.capture import Provenance, capture_readings, propose
    from commstack.machine.capture.readings import scrub
    from commstack.machine.check.checks import packages_file
    from commstack.machine.check.identity import this_machine
    from commstack.machine.check.result import EXIT_NOT_THIS_MACHINE

    machine = resolve(args.machine) if args.machine else default_machine()
    here, identity = this_machine(machine.facts.get("verify", {}).get("this_machine") or {})
    if not here:
        print(f"machine {machine.name}: NOT this machine ({identity}); nothing read",
              file=sys.stderr)
        return EXIT_NOT_THIS_MACHINE
    packages = args.packages or packages_file(machine)
    prov = Provenance.here()
    readings = capture_readings(machine, packages, use_spack=not args.no_spack)
    proposal = propose(machine, packages, readings, prov)

    print(f"machine {machine.name}: captured on {prov.host}, {prov.date} ({identity})")
    rows = [["fact", "committed", "captured", "", "command / note"]]
    for r in readings:
        mark = "≠" if r.differs else ("=" if r.read else "?")
        rows.append([r.fact, _cut(r.committed), _cut(r.value), mark,
                     scrub("; ".join(filter(None, [r.command, r.note])))])
    print("\n".join(_table(rows)))
    placed = len(proposal.changed) - len(proposal.unplaced)
    print(f"{sum(r.read for r in readings)} read, {len(proposal.changed)} differ "
          f"({placed} in the proposal, {len(proposal.unplaced)} for you to resolve: ≠ rows "
          f"the diff does not change), {sum(not r.read for r in readings)} not read here")
    label = _label(machine.path.parent) if machine.path else machine.name
    diff = proposal.diff(label)
    if diff:
        print(diff, end="")
    if args.out:
        out = args.out
        out.mkdir(parents=True, exist_ok=True)
        (out / "machine.yaml").write_text(proposal.machine[1])
        if packages:
            (out / "packages.yaml").write_text(proposal.packages[1])
        (out / "capture.diff").write_text(diff)
        (out / "provenance.yaml").write_text(yaml.safe_dump(
            {"machine": machine.name, "host": prov.host, "date": prov.date,
             "readings": [r.to_dict(prov) for r in readings]}, sort_keys=False,
            allow_unicode=True))
        print(f"wrote {out}/machine.yaml{', packages.yaml' if packages else ''}, "
              "provenance.yaml, capture.diff")
    return 1 if proposal.changed else 0
