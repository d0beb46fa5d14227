"""Capability pre-flight: refuse, before anything is launched, what a stack cannot do.

Per stack, once per process (and cached on disk by tool), the installation's own tools say what
it has: ``ompi_info`` the MCA components and parameters, ``ucx_info`` the transports, devices,
variables and value syntax, ``impi_info`` and ``mpivars`` Intel MPI's and MPICH's variables.
See docs/explanation/preflight.md.
"""

from commstack.preflight.check import (  # noqa: F401  (the package's interface)
    ALLOW_FLAG,
    Preflight,
    PreflightError,
    Problem,
    Verdict,
    add_allow_argument,
    check_plan,
    default,
    normalise,
)
from commstack.preflight.tools import ToolCache  # noqa: F401
