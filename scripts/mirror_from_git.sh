#!/usr/bin/env bash
# Add one source tarball, made from a local git clone, to a Spack source mirror.
#
# A thin wrapper around `python -m commstack.mirror add` (src/commstack/mirror.py), which also
# backs `commstack mirror` (every row of packages/mirror-sources.tsv at once). Works from a plain
# checkout: it puts ../src on PYTHONPATH; only python3 (3.9+), git and gzip are needed.
#
# The tarball is built like GitHub's archive endpoints build theirs
# (`git archive --format=tar --prefix=<prefix> <ref> | gzip -n`), so for a tag the
# sha256 equals the one a Spack recipe records for
#   https://github.com/<org>/<repo>/archive/refs/tags/<tag>.tar.gz   (prefix <repo>-<tag without v>/)
# and for a commit the one for
#   https://github.com/<org>/<repo>/archive/<full sha>.tar.gz          (prefix <repo>-<full sha>/).
#
# Mirror layout written (what `spack mirror create` makes; Spack 1.x looks sources up by checksum):
#   <mirror>/<package>/<package>-<version>.<ext>
#   <mirror>/_source-cache/archive/<sha256[0:2]>/<sha256>.<ext> -> ../../../<package>/<package>-<version>.<ext>
#
# Prints the sha256 on stdout. Idempotent: an identical existing entry is left alone; an existing
# different file (or a symlink pointing elsewhere) is an error and nothing is overwritten.
set -euo pipefail

usage() {
    cat <<'USAGE'
usage: mirror_from_git.sh --git DIR --ref TAG_OR_SHA --prefix DIRNAME/ --package NAME
                          --version VER --mirror DIR [--sha256 EXPECTED] [--ext tar.gz]

  --git DIR        local git clone (bare or not) holding REF
  --ref REF        tag, branch or commit to archive
  --prefix P       top directory inside the tarball, with trailing slash (e.g. mpi-benchmarks-IMB-v2021.7/)
  --package NAME   Spack package name (mirror subdirectory)
  --version VER    Spack version (file name <package>-<version>.<ext>)
  --mirror DIR     mirror root (created if missing)
  --sha256 SUM     optional: fail unless the archive has this sha256 (e.g. the recipe's checksum)
  --ext EXT        archive extension, only tar.gz is supported (default)
USAGE
}

for arg in "$@"; do
    case "$arg" in -h|--help) usage; exit 0 ;; esac
done

src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../src" && pwd)"
export PYTHONPATH="$src${PYTHONPATH:+:$PYTHONPATH}"
exec "${PYTHON:-python3}" -m commstack.mirror add "$@"
