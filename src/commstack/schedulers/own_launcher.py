"""The MPI's own launcher inside an allocation, whichever scheduler made it: machine.yaml's
launchers.<flavour>.command when it is not the scheduler's step launcher (Betzy's Intel MPI
mpirun); the launcher reads the allocation's nodes from the scheduler itself."""

from __future__ import annotations

import dataclasses
from typing import Dict, List, Tuple

from commstack.flavours import FlavourError
from commstack.launch.builder import LaunchError, LaunchSpec
from commstack.placement.model import Expected


def in_allocation(spec: LaunchSpec, command: List[str]) -> Tuple[List[str], Dict[str, str], Expected]:
    try:
        launch = spec.flavour.in_allocation(command, spec.request, spec.placement, spec.env)
    except FlavourError as exc:
        raise LaunchError(f"point {spec.point.id}: stack {spec.stack.name!r}: {exc}") from None
    return launch.argv, launch.env, dataclasses.replace(spec.expected, cpus=spec.launcher_cpus,
                                                   cpu_span=spec.launcher_span)
