#!/usr/bin/env bash
# Run a sweep matrix (a thin wrapper over `commstack run`).
#
#   scripts/run_matrix.sh MATRIX [--machine NAME] [--out DIR] [--campaign NAME]
#                                [--dry-run] [--retry-failed] [--report]
#
# Running it again resumes: finished points are skipped, failed ones retried only with
# --retry-failed. Results go to DIR/<machine>/<campaign>/ (default results/).
# Works from a checkout on a compute node with only python3, PyYAML and jsonschema.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ $# -lt 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    [ $# -ge 1 ] && exit 0 || exit 2
fi
if [ -x "$here/.venv/bin/commstack" ]; then
    exec "$here/.venv/bin/commstack" run "$@"
elif command -v commstack >/dev/null 2>&1; then
    exec commstack run "$@"
fi
export PYTHONPATH="$here/src${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m commstack run "$@"
