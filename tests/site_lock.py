"""Concretize a remote machine's environment as its own nodes would: its OS and its glibc.

Spack >= 1.0 reads the libc from the C compiler of the machine that solves (it runs the compiler
and its dynamic linker) and stamps that machine's OS on every node, so a lock solved here would
carry Debian 12 and glibc 2.36. Each site declares what its nodes run in machine.yaml
(``os: {spack_os, glibc, source}``); this script solves with those instead:

    .venv/bin/python tests/site_lock.py betzy [bm-optimized3-36 perlmutter]

It copies the environment (as tests/test_environments.py does, so the relative include and
repos paths hold), runs ``spack -e <copy> python site_lock.py --inside <os> <glibc>`` (Spack's
own Python: the host platform is given the site's OS as its default and every compiler reports
the site's glibc, prefix /usr), then ``concretize --force`` and writes the lock back to
environments/<machine>/spack.lock. Nothing else about the solve changes: a plain ``spack -e
environments/<m> concretize`` has the same roots (tests/test_environments.py checks that), only
its OS and libc are the host's. On the machine itself, after the VERIFY items, use
``spack -e environments/<m> concretize --force``: there the compiler reports the real libc.
"""

from __future__ import annotations

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
    import yaml

    facts = yaml.safe_load((REPO / "site-configs" / machine / "machine.yaml").read_text())
    return facts["os"]


def relock(machine: str) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import spack_support
    from test_environments import copy_tree

    declared = site_os(machine)
    with tempfile.TemporaryDirectory(prefix=f"site-lock-{machine}-") as tmp:
        envdir = copy_tree(machine, Path(tmp))
        spack_support.run_spack(["-e", str(envdir), "python", str(Path(__file__).resolve()),
                                 "--inside", declared["spack_os"], str(declared["glibc"])],
                                timeout=3600)
        target = REPO / "environments" / machine / "spack.lock"
        target.write_text((envdir / "spack.lock").read_text())
    return target


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inside"]:
        inside_spack(sys.argv[2], sys.argv[3])
    else:
        for m in sys.argv[1:]:
            print(relock(m))
