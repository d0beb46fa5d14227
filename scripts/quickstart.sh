#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu-like machine with Python 3.9+:
# set up a venv with commstack and Intel MPI (PyPI), then run the quick local sweep
# (matrices/local/quick.yaml) and print the path of its report.
# Debian Open MPI is swept too when an IMB built against it is found (COMMSTACK_IMB_OPENMPI_BIN,
# or the Spack test environment, see docs/howto/set-up-spack.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source scripts/setup_venv.sh report
if [ -z "${COMMSTACK_IMB_OPENMPI_BIN:-}" ] && command -v mpirun.openmpi >/dev/null 2>&1; then
    if bin=$("$VENV/bin/python" -m commstack.spack tests/spack/imb-openmpi); then
        export COMMSTACK_IMB_OPENMPI_BIN="$bin"
        echo "quickstart: Open MPI stack uses $bin"
    else
        echo "quickstart: Debian Open MPI found, but no IMB built against it (no Spack); only Intel MPI runs"
    fi
fi
"$VENV/bin/commstack" run matrices/local/quick.yaml --report "$@"
