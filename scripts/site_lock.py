#!/usr/bin/env python3
"""Re-solve a remote site's Spack lock (environments/<machine>/spack.lock) here, for the OS and
glibc of that site's compute nodes.

Spack >= 1.0 reads the libc from the C compiler of the machine that solves (it runs the compiler
and its dynamic linker) and stamps that machine's OS on every node, so a lock solved here would
carry Debian 12 and glibc 2.36. Each site declares what its nodes run in machine.yaml
(``os: {spack_os, glibc, source}``; where they are VERIFY, the provisional ``os.solve_as``);
this script solves with those instead:

    .venv/bin/python scripts/site_lock.py betzy [bm-optimized3-36 perlmutter]

Run it after editing a remote environments/<machine>/spack.yaml or site-configs/<machine>/
(tests/test_site_facts.py fails on a lock whose roots, OS or libc are not the declared ones);
it needs Spack (found as the tests find it) and takes minutes per machine.

It copies the environment (with tests/test_environments.py's copy_tree, so the relative include
and repos paths hold), runs ``spack -e <copy> python site_lock.py --inside <os> <glibc>`` (Spack's
own Python: the host platform is given the site's OS as its default and every compiler reports
the site's glibc, prefix /usr), then ``concretize --force`` and writes the lock back to
environments/<machine>/spack.lock. Nothing else about the solve changes: a plain ``spack -e
environments/<m> concretize`` has the same roots (tests/test_environments.py checks that), only
its OS and libc are the host's. On the machine itself, after the VERIFY items, use
``spack -e environments/<m> concretize --force``: there the compiler reports the real libc.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def inside_spack(spack_os: str, glibc: str) -> None:
    """Run by ``spack python`` in the copied environment."""
    import spack.compilers.libraries as libraries
    import spack.environment as ev
    import spack.operating_systems
    import spack.platforms
    import spack.spec

    name = "".join(c for c in spack_os if not c.isdigit())
    version = spack_os[len(name):]
    platform = spack.platforms.host()
    platform.add_operating_system(spack_os, spack.operating_systems.OperatingSystem(name,
                                                                                   version))
    platform.default_os = spack_os

    def site_libc(self):  # every compiler of the site targets the site's glibc
        libc = spack.spec.Spec(f"glibc@={glibc}")
        libc.external_path = "/usr"
        return libc

    libraries.CompilerPropertyDetector.default_libc = site_libc
    env = ev.active_environment()
    env.concretize(force=True)
    env.write()


def site_os(machine: str) -> dict:
    """The ``os:`` of site-configs/<machine>/machine.yaml; SystemExit naming what is missing."""
    import yaml

    facts_file = REPO / "site-configs" / machine / "machine.yaml"
    env_file = REPO / "environments" / machine / "spack.yaml"
    for needed in (facts_file, env_file):
        if not needed.is_file():
            raise SystemExit(f"site_lock.py: {machine}: no {needed.relative_to(REPO)}")
    facts = yaml.safe_load(facts_file.read_text()) or {}
    declared = facts.get("os")
    if not isinstance(declared, dict) or not {"spack_os", "glibc"} <= set(declared):
        raise SystemExit(f"site_lock.py: {facts_file.relative_to(REPO)} declares no "
                         "os: {spack_os, glibc} (the nodes' OS and C library)")
    return solved_for(declared, str(facts_file.relative_to(REPO)))


def solved_for(declared: dict, where: str = "machine.yaml") -> dict:
    """The OS and glibc a lock is solved for: os: itself, or where it says VERIFY (no source
    names them) its provisional os.solve_as."""
    if "VERIFY" not in (declared["spack_os"], str(declared["glibc"])):
        return declared
    if "solve_as" not in declared:
        raise SystemExit(f"site_lock.py: {where}: os: is VERIFY and gives no solve_as: "
                         "{spack_os, glibc, why} to solve the lock for until it is read")
    return {**declared, **declared["solve_as"]}


def relock(machine: str) -> Path:
    from commstack.spack import run_spack

    sys.path.insert(0, str(REPO / "tests"))
    from test_environments import copy_tree

    declared = site_os(machine)
    with tempfile.TemporaryDirectory(prefix=f"site-lock-{machine}-") as tmp:
        envdir = copy_tree(machine, Path(tmp))
        run_spack(["-e", str(envdir), "python", str(Path(__file__).resolve()),
                   "--inside", declared["spack_os"], str(declared["glibc"])], timeout=3600)
        target = REPO / "environments" / machine / "spack.lock"
        target.write_text((envdir / "spack.lock").read_text())
    return target


def main(argv: list) -> None:
    parser = argparse.ArgumentParser(
        prog="scripts/site_lock.py",
        description="Re-solve environments/<machine>/spack.lock for the OS and glibc the "
        "machine's compute nodes run (site-configs/<machine>/machine.yaml `os:`), not this "
        "host's, and write it back. On the machine itself use `spack -e "
        "environments/<machine> concretize --force` instead.")
    parser.add_argument("machines", nargs="*", metavar="machine",
                        help="e.g. betzy bm-optimized3-36 perlmutter")
    parser.add_argument("--inside", nargs=2, metavar=("SPACK_OS", "GLIBC"),
                        help=argparse.SUPPRESS)  # the step run by `spack python`
    args = parser.parse_args(argv)
    if args.inside:
        inside_spack(*args.inside)
        return
    if not args.machines:
        parser.error("name at least one machine (a folder of environments/)")
    try:
        import yaml  # noqa: F401

        import commstack  # noqa: F401
    except ImportError as exc:
        raise SystemExit(f"site_lock.py: {exc}: run it with the project's venv, "
                         ".venv/bin/python scripts/site_lock.py") from None
    declared = {m: site_os(m) for m in args.machines}  # every name checked before solving
    for machine in declared:
        print(relock(machine))


if __name__ == "__main__":
    main(sys.argv[1:])
