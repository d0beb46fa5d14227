#!/usr/bin/env bash
# Create (or update) the project's virtual environment: commstack itself plus Intel MPI from PyPI
# (impi-rt ships prebuilt IMB-MPI1, IMB-NBC, IMB-RMA, IMB-P2P, IMB-MT) and clingo, the solver
# Spack needs when it runs from this venv. Sourced by quickstart.sh
# and test.sh; afterwards VENV and I_MPI_ROOT are set.
#   COMMSTACK_VENV   where the venv lives (default: .venv in the checkout)
#   extras           first argument: pip extras of commstack to install (default: report)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${COMMSTACK_VENV:-$root/.venv}
extras=${1:-report}
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV" || {
        echo "error: python3 -m venv failed; install python3-venv (apt-get install python3-venv)" >&2
        exit 1
    }
fi
"$VENV/bin/python" -m pip install -q --upgrade pip
"$VENV/bin/python" -m pip install -q -e "$root[$extras]" impi-rt impi-devel clingo
export VENV
export I_MPI_ROOT="$VENV"
