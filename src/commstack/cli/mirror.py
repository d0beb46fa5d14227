"""Build a Spack source mirror from local git clones, verifying every sha256 against a manifest.

Each manifest row (packages/mirror-sources.tsv) names a package version, its git repository, the
ref and the tarball's top directory, and the sha256 the recipe expects. The archive is rebuilt
from the clone <clones>/<repository name> (or the row's git_dir) the way GitHub builds its
tarballs (git archive | gzip -n) or, for tar_prefix "-", taken from a release tarball kept in
git (ref COMMIT:PATH), checked, and stored as <out>/<pkg>/<pkg>-<version>.tar.gz plus
<out>/_source-cache/archive/<2 hex>/<sha256>.tar.gz (a relative symlink), which is where Spack
looks. Existing identical entries are kept; a different existing file is never overwritten.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from commstack.mirror import MirrorError, build_mirror, read_sources


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sources", type=Path, default=Path("packages/mirror-sources.tsv"),
                   help="manifest (default: packages/mirror-sources.tsv)")
    p.add_argument("--clones", type=Path, required=True,
                   help="directory holding one git clone per repository (bare or not)")
    p.add_argument("--out", type=Path, required=True, help="mirror root (created if missing)")
    p.add_argument("--package", action="append", default=[], metavar="NAME",
                   help="only this package's rows (repeatable)")


def execute(args: argparse.Namespace) -> int:
    try:
        sources = read_sources(args.sources)
        done, errors = build_mirror(sources, args.clones, args.out, args.package)
    except MirrorError as exc:
        errors, done = [str(exc)], []
    for item in done:
        print(f"{item.status:8} {item.package}@{item.version}  {item.sha256}  {item.path}")
    for err in errors:
        print(f"commstack mirror: error: {err}", file=sys.stderr)
    if errors:
        print(f"commstack mirror: {len(errors)} error(s), {len(done)} source(s) in {args.out}",
              file=sys.stderr)
        return 2
    return 0
