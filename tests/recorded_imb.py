"""A recorded IMB-MPI1 output as a benchmark a real `commstack tune` launches (tests of the
tuner: racing, carried incumbents): the output is real, the knob's effect is scripted."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from tests.conftest import REPO

RECORDED = REPO / "tests/fixtures/imb/intelmpi-2021.18/prebuilt-mpi1-pingpong-np2.out"


def recorded_imb(folder: Path) -> Path:
    """An executable printing the recorded PingPong output, its times three times longer when
    I_MPI_ADJUST_ALLREDUCE is 4."""
    exe = folder / "recorded-imb"
    exe.write_text(dedent(f"""\
        #!/bin/sh
        if [ "$I_MPI_ADJUST_ALLREDUCE" = 4 ]; then
          awk 'NF == 4 && $1 ~ /^[0-9]+$/ {{ $3 = $3 * 3; $4 = $4 / 3 }} {{ print }}' {RECORDED}
        else
          cat {RECORDED}
        fi
        """))
    exe.chmod(0o755)
    return exe


def local_plan(folder: Path, name: str, text: str) -> Path:
    """``text`` as plans/local/<name>.yaml under ``folder``."""
    plan = folder / "plans" / "local" / f"{name}.yaml"
    plan.parent.mkdir(parents=True)
    plan.write_text(text)
    return plan
