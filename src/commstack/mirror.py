"""Build a Spack source mirror from local git clones, offline, with verified checksums.

GitHub serves ``/archive/refs/tags/<tag>.tar.gz`` (and ``/archive/<sha>.tar.gz``) as
``git archive --format=tar --prefix=<repo>-<tag without v>/ <ref> | gzip -n``; rebuilding the
tarball that way from a clone gives the same bytes, hence the sha256 a Spack recipe records.
Some projects keep release tarballs as files inside a git repository instead (GASNet-EX's are in
github.com/StanfordLegion/gasnet); such a source is taken verbatim from ``<commit>:<path>``.
A source that is in no git repository (e.g. the ``.orig`` tarball of a Debian source package,
fetched with ``apt-get source --download-only``) is taken verbatim from a downloaded file.

Mirror layout (what ``spack mirror create`` writes; Spack 1.x looks sources up by checksum)::

    <mirror>/<package>/<package>-<version>.<ext>
    <mirror>/_source-cache/archive/<sha256[:2]>/<sha256>.<ext> -> ../../../<package>/<package>-<version>.<ext>

An identical existing entry is left alone; a different existing file or symlink is an error and
nothing is overwritten. Files appear atomically (written aside, then hard-linked into place).

The manifest (``packages/mirror-sources.tsv``) is tab-separated with a header row: ``package``,
``version``, ``git_url``, ``ref``, ``tar_prefix``, ``sha256`` and optionally ``git_dir`` (the
clone, relative to ``--clones``; default: the last component of ``git_url`` without ``.git``).
A git ``ref`` may be followed by git pathspecs (``v0.81.0 :(exclude)<path>``) that leave a file
out of the archive (one the clone lacks; the sha256 is then of that archive, not GitHub's).
``tar_prefix`` ``-`` means "``ref`` is ``<commit>:<path>`` of a ready-made archive"; ``file`` means
"``ref`` is a ready-made archive, a file in the clone directory (a download directory then)",
and ``git_url`` is where it was downloaded from: when that is a Debian ``.dsc``, the ``.dsc``
must lie next to the file and list it with the row's sha256. Blank lines and lines starting
with ``#`` are ignored.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, List, Optional, Sequence

COLUMNS = ("package", "version", "git_url", "ref", "tar_prefix", "sha256")
OPTIONAL_COLUMNS = ("git_dir",)
#: ``tar_prefix`` value marking a ready-made archive stored in git as ``<commit>:<path>``
BLOB = "-"
#: ``tar_prefix`` value marking a ready-made archive stored as a file (``ref``) in the clone dir
FILE = "file"
ARCHIVE_EXTENSIONS = ("tar.gz", "tar.bz2", "tar.xz", "tgz", "zip")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class MirrorError(ValueError):
    """A bad manifest row, a missing clone or ref, a checksum mismatch or a conflicting file."""


@dataclass(frozen=True)
class Source:
    """One manifest row: how to rebuild one source archive of one package version."""

    package: str
    version: str
    git_url: str
    ref: str
    tar_prefix: str
    sha256: str
    git_dir: str = ""
    where: str = ""  # "<manifest>:<line>" for messages

    @property
    def clone_name(self) -> str:
        if self.git_dir:
            return self.git_dir
        name = self.git_url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
        return name[: -len(".git")] if name.endswith(".git") else name

    @property
    def ext(self) -> str:
        if self.tar_prefix not in (BLOB, FILE):
            return "tar.gz"
        path = self.ref if self.tar_prefix == FILE else self.ref.split(":", 1)[1]
        for ext in ARCHIVE_EXTENSIONS:
            if path.endswith("." + ext):
                return ext
        raise MirrorError(f"{self.where}: cannot tell the archive type of {path!r}")


@dataclass(frozen=True)
class Added:
    """Outcome for one source: ``added`` (new file) or ``present`` (identical file existed)."""

    package: str
    version: str
    sha256: str
    path: Path
    status: str


def read_sources(path: Path) -> List[Source]:
    """Parse and validate a manifest; errors name the file and line."""
    path = Path(path)
    lines = [
        (n, line)
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if line.strip() and not line.lstrip().startswith("#")
    ]
    if not lines:
        raise MirrorError(f"{path}: empty manifest (expected a header row: {' '.join(COLUMNS)})")
    header_no, header_line = lines[0]
    header = header_line.split("\t")
    missing = [c for c in COLUMNS if c not in header]
    unknown = [c for c in header if c not in COLUMNS + OPTIONAL_COLUMNS]
    if missing or unknown:
        raise MirrorError(
            f"{path}:{header_no}: header must be tab-separated {', '.join(COLUMNS)} "
            f"[, {', '.join(OPTIONAL_COLUMNS)}]; "
            + "; ".join(
                filter(None, [missing and f"missing {missing}", unknown and f"unknown {unknown}"])
            )
        )
    sources: List[Source] = []
    seen = {}
    for n, line in lines[1:]:
        where = f"{path}:{n}"
        cells = line.split("\t")
        if len(cells) > len(header):
            raise MirrorError(f"{where}: {len(cells)} fields, header has {len(header)}")
        row = dict(zip(header, (c.strip() for c in cells)))
        for c in COLUMNS:
            if c != "sha256" and not row.get(c):
                raise MirrorError(f"{where}: empty {c!r}")
        src = Source(**{c: row.get(c, "") for c in COLUMNS + OPTIONAL_COLUMNS}, where=where)
        for field in ("package", "version"):
            if not _NAME.match(getattr(src, field)):
                raise MirrorError(f"{where}: bad {field} {getattr(src, field)!r}")
        if src.sha256 and not _SHA256.match(src.sha256):
            raise MirrorError(f"{where}: sha256 must be 64 lower-case hex digits")
        if src.tar_prefix == BLOB:
            if ":" not in src.ref:
                raise MirrorError(f"{where}: tar_prefix '-' needs ref <commit>:<path>")
            _ = src.ext  # validates the archive type
        elif src.tar_prefix == FILE:
            if src.ref.startswith("/") or ".." in src.ref.split("/"):
                raise MirrorError(f"{where}: tar_prefix 'file' needs ref relative to its directory")
            _ = src.ext
        elif not src.tar_prefix.endswith("/"):
            raise MirrorError(f"{where}: tar_prefix must end with '/' (got {src.tar_prefix!r})")
        key = (src.package, src.version)
        if key in seen:
            raise MirrorError(f"{where}: {src.package}@{src.version} is also on {seen[key]}")
        seen[key] = where
        sources.append(src)
    return sources


def _git(git_dir: Path, *args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(git_dir), *args], **kw)


def make_archive(git_dir: Path, ref: str, tar_prefix: str) -> bytes:
    """The bytes of the source archive: ``git archive | gzip -n``, or a stored blob."""
    git_dir = Path(git_dir)
    if not git_dir.is_dir():
        raise MirrorError(f"no such git clone: {git_dir}")
    if tar_prefix == BLOB:
        proc = _git(git_dir, "cat-file", "blob", ref, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE)
        if proc.returncode != 0:
            raise MirrorError(f"{ref!r} is not a file in {git_dir}: {proc.stderr.decode().strip()}")
        return proc.stdout
    ref, *pathspecs = ref.split()  # "<tag> :(exclude)<path>": a file left out of the archive
    check = _git(git_dir, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if check.returncode != 0:
        raise MirrorError(f"ref {ref!r} not found in {git_dir}")
    # GNU gzip, not Python's zlib: the two deflate implementations produce different bytes.
    archive = subprocess.Popen(
        ["git", "-C", str(git_dir), "archive", "--format=tar", f"--prefix={tar_prefix}", ref,
         *pathspecs],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    gzip = subprocess.run(["gzip", "-n"], stdin=archive.stdout, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    assert archive.stdout is not None and archive.stderr is not None
    archive.stdout.close()
    err = archive.stderr.read().decode()
    if archive.wait() != 0 or gzip.returncode != 0:
        raise MirrorError(f"git archive {ref} in {git_dir} failed: {err.strip()}"
                          f"{gzip.stderr.decode().strip()}")
    return gzip.stdout


def read_file_source(src: Source, directory: Path) -> bytes:
    """A ``file`` source's bytes; a Debian ``.dsc`` named by ``git_url`` must vouch for them."""
    path = Path(directory) / src.ref
    if not path.is_file():
        raise MirrorError(f"no file {path} (download {src.git_url} and its files there)")
    data = path.read_bytes()
    dsc_name = src.git_url.rstrip("/").rsplit("/", 1)[-1]
    if dsc_name.endswith(".dsc"):
        dsc = Path(directory) / dsc_name
        if not dsc.is_file():
            raise MirrorError(f"no {dsc} next to {path} (apt-get source --download-only keeps it)")
        sha = hashlib.sha256(data).hexdigest()
        listed = re.search(rf"^ {sha} \d+ {re.escape(Path(src.ref).name)}$", dsc.read_text(),
                           re.MULTILINE)
        if not listed:
            raise MirrorError(f"{dsc} does not list {Path(src.ref).name} with sha256 {sha}")
    return data


def _link_new(data: bytes, dest: Path) -> str:
    """Create ``dest`` with ``data`` unless an identical file exists; never overwrite."""
    if dest.exists() or dest.is_symlink():
        if dest.is_file() and dest.read_bytes() == data:
            return "present"
        raise MirrorError(f"refusing to overwrite existing different file: {dest}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        try:
            os.link(tmp, dest)
        except FileExistsError:  # appeared meanwhile (another writer)
            return _link_new(data, dest)
    finally:
        tmp.unlink(missing_ok=True)
    return "added"


def _symlink(target: str, link: Path, dest: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.symlink(target, link)
        return
    except FileExistsError:
        pass
    if link.is_symlink():
        if os.readlink(link) != target:
            raise MirrorError(
                f"refusing to overwrite existing symlink {link} -> {os.readlink(link)} "
                f"(wanted {target})"
            )
    elif link.read_bytes() != dest.read_bytes():
        raise MirrorError(f"refusing to overwrite existing different file: {link}")


def add_archive(data: bytes, package: str, version: str, mirror: Path, ext: str = "tar.gz",
                expected_sha256: Optional[str] = None, what: str = "") -> Added:
    """Store ``data`` as ``package@version`` in ``mirror`` (both layout entries)."""
    sha = hashlib.sha256(data).hexdigest()
    if expected_sha256 is not None and sha != expected_sha256:
        raise MirrorError(
            f"{what or f'{package}@{version}'}: sha256 is {sha}, expected {expected_sha256} "
            "(check ref and tar_prefix; nothing written)"
        )
    mirror = Path(mirror)
    rel = f"{package}/{package}-{version}.{ext}"
    dest = mirror / rel
    status = _link_new(data, dest)
    _symlink(f"../../../{rel}", mirror / "_source-cache" / "archive" / sha[:2] / f"{sha}.{ext}",
             dest)
    return Added(package, version, sha, dest, status)


def add_source(src: Source, clones: Path, mirror: Path) -> Added:
    """Rebuild one manifest row's archive from its clone, verify it, store it."""
    what = f"{src.where}: {src.package}@{src.version}"
    clone = Path(clones) / src.clone_name
    if not clone.is_dir():
        fetch = (f"download {src.git_url} and its files into it" if src.tar_prefix == FILE
                 else f"git clone --bare {src.git_url} {clone}")
        raise MirrorError(f"{what}: no {'directory' if src.tar_prefix == FILE else 'clone'} "
                          f"at {clone} ({fetch})")
    try:
        if src.tar_prefix == FILE:
            data = read_file_source(src, clone)
        else:
            data = make_archive(clone, src.ref, src.tar_prefix)
    except MirrorError as exc:
        raise MirrorError(f"{what}: {exc}") from None
    if not src.sha256:
        raise MirrorError(
            f"{what}: empty sha256 column; this archive's sha256 is "
            f"{hashlib.sha256(data).hexdigest()} (compare it with the recipe, then fill it in)"
        )
    return add_archive(data, src.package, src.version, mirror, src.ext, src.sha256, what)


def select(sources: Sequence[Source], packages: Optional[Iterable[str]]) -> List[Source]:
    """The rows of the given packages (all rows without a filter); unknown names are errors."""
    if not packages:
        return list(sources)
    wanted = set(packages)
    unknown = sorted(wanted - {s.package for s in sources})
    if unknown:
        raise MirrorError(f"no manifest rows for package(s): {', '.join(unknown)}")
    return [s for s in sources if s.package in wanted]


def build_mirror(sources: Sequence[Source], clones: Path, mirror: Path,
                 packages: Optional[Iterable[str]] = None):
    """Add every (selected) source; returns (added, errors) and goes on past failing rows."""
    done: List[Added] = []
    errors: List[str] = []
    for src in select(sources, packages):
        try:
            done.append(add_source(src, clones, mirror))
        except MirrorError as exc:
            errors.append(str(exc))
    return done, errors


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m commstack.mirror add --git DIR --ref REF --prefix P/ --package NAME --version V
    --mirror DIR [--sha256 SUM]``: add one archive (scripts/mirror_from_git.sh calls this)."""
    ap = argparse.ArgumentParser(prog="python -m commstack.mirror")
    sub = ap.add_subparsers(dest="cmd", required=True)
    add = sub.add_parser("add", help="add one archive built from a git clone")
    add.add_argument("--git", required=True, type=Path, help="local git clone holding REF")
    add.add_argument("--ref", required=True, help="tag, branch or commit (or COMMIT:PATH with --prefix -)")
    add.add_argument("--prefix", required=True, help="top directory in the tarball, ending in '/'")
    add.add_argument("--package", required=True)
    add.add_argument("--version", required=True)
    add.add_argument("--mirror", required=True, type=Path)
    add.add_argument("--sha256", default=None, help="fail unless the archive has this sha256")
    add.add_argument("--ext", default="tar.gz", choices=["tar.gz"])
    args = ap.parse_args(argv)
    try:
        if args.prefix != BLOB and not args.prefix.endswith("/"):
            raise MirrorError(f"--prefix must end with '/' (got {args.prefix!r})")
        for field in ("package", "version"):
            if not _NAME.match(getattr(args, field)):
                raise MirrorError(f"bad --{field} {getattr(args, field)!r}")
        data = make_archive(args.git, args.ref, args.prefix)
        res = add_archive(data, args.package, args.version, args.mirror, args.ext, args.sha256,
                          f"{args.ref} with prefix {args.prefix}")
    except MirrorError as exc:
        print(f"mirror: error: {exc}", file=sys.stderr)
        return 1
    if res.status == "present":
        print(f"mirror: {res.path} already present and identical", file=sys.stderr)
    print(res.sha256)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
