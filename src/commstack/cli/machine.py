"""Check a machine's facts (machine.yaml, packages.yaml) against the machine itself, or capture
them there (`commstack machine capture --help`).

`commstack machine check [MACHINE]` reads the node layout (hwloc, lscpu; Slurm's node record on
a login node), RDMA devices and libfabric providers, `srun --mpi=list`, the Slurm version,
partitions, every Spack external's prefix, version and modules, kernel modules and libraries
the launchers need, and prints fact | declared | measured | ✔/✘/? with how each was read.
Run it on a login node and inside an allocation.

exit status: 0 no contradiction (? facts could not be read here), 1 a contradiction,
2 a user error (unknown machine, invalid machine.yaml), 5 this host is not MACHINE (nothing read).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from commstack.cli.machine_choice import default_machine, resolve


def register(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="machine_command", required=True, metavar="ACTION")
    check = sub.add_parser("check", help="compare machine.yaml and packages.yaml with this host",
                           description=__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("machine", nargs="?", default=None,
                       help="a name under site-configs/ or a path to a machine.yaml (default: the "
                            "site config whose verify.this_machine matches this host, else local)")
    check.add_argument("--packages", type=Path, default=None,
                       help="packages.yaml with the Spack externals (default: beside machine.yaml)")
    check.add_argument("--cheap", action="store_true",
                       help="only the checks `run` and `submit` make (node layout, step MPI plugins)")
    check.add_argument("--json", action="store_true", help="JSON for scripts")
    from commstack.cli import machine_calibrate, machine_capture

    machine_capture.register(sub)
    machine_calibrate.register(sub)


def execute(args: argparse.Namespace) -> int:
    if args.machine_command == "capture":
        from commstack.cli import machine_capture

        return machine_capture.execute(args)
    if args.machine_command == "calibrate":
        from commstack.cli import machine_calibrate

        return machine_calibrate.execute(args)
    from commstack.machine.check import check_machine
    from commstack.machine.check.render import as_json, table

    machine = resolve(args.machine) if args.machine else default_machine()
    outcome = check_machine(machine, args.packages, cheap_only=args.cheap)
    print(as_json(outcome) if args.json else table(outcome))
    return outcome.exit_code
