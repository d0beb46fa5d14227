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


def recorded_plan(campaign: str, repeats: int, defaults: str, steps: str, more: str = "") -> str:
    """A tuning plan over the recorded IMB (``EXE`` stands for its path) launched by Intel MPI:
    ``defaults`` the flow mapping's inside, ``steps`` the steps' list, ``more`` further keys."""
    return dedent(f"""\
        campaign: {campaign}
        base:
          benchmark: imb-mpi1
          repeats: {repeats}
          timeout: 60
          stacks:
            impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
          parameters: {{stack: impi, ranks_per_node: 1, executable: EXE}}
        cases:
          benchmarks: [PingPong]
        defaults: {{{defaults}}}
        steps:
        """) + dedent(steps) + dedent(more)


# Two steps over Intel MPI's Allreduce and Bcast algorithms, the second carrying its incumbent.
TWO_STEPS = """\
      - name: allreduce
        product: {I_MPI_ADJUST_ALLREDUCE: [1, 4]}
      - name: bcast
        product: {I_MPI_ADJUST_BCAST: [1, 2]}
    """
