#!/usr/bin/env bash
# Set up and run the whole test suite (arguments go to pytest).
# Installs the Debian packages of scripts/system-packages.txt when it can (root or sudo, apt-get;
# COMMSTACK_NO_APT=1 turns that off); otherwise the tests needing them are skipped with a reason.
# Spack tests run when Spack and a source mirror are found (see docs/howto/set-up-spack.md), and are
# otherwise reported as "skipped: no spack".
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
bash scripts/system_packages.sh
source scripts/setup_venv.sh test
"$VENV/bin/python" -m pip install -q ruff
"$VENV/bin/python" -m ruff check src tests
exec "$VENV/bin/python" -m pytest "$@"
