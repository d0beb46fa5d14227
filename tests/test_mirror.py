"""`commstack mirror`: a Spack source mirror rebuilt from real git clones, checksums verified.

Runs everywhere (git and gzip only, no Spack): a tiny repository is made in tmp, tagged, and
archived the way GitHub archives tags.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest

from commstack.mirror import MirrorError, read_sources
from tests.conftest import REPO
from tests.sweeps import commstack

HEADER = "package\tversion\tgit_url\tref\ttar_prefix\tsha256\n"


def git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_DATE": "2024-01-02T03:04:05Z",
           "GIT_COMMITTER_DATE": "2024-01-02T03:04:05Z"}
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org",
         "-c", "commit.gpgsign=false", "-c", "tag.gpgsign=false", *args],
        check=True, capture_output=True, text=True, env=env,
    ).stdout.strip()


def github_tarball_sha256(repo: Path, ref: str, prefix: str) -> str:
    """Independent reference: the shell pipeline GitHub's archive endpoint is equivalent to."""
    out = subprocess.run(
        f"git -C '{repo}' archive --format=tar --prefix='{prefix}' '{ref}' | gzip -n | sha256sum",
        shell=True, check=True, capture_output=True, text=True,
    ).stdout
    return out.split()[0]


@pytest.fixture
def clones(tmp_path: Path) -> Path:
    """<tmp>/clones/tiny: a git repository with tags v1.0 and v1.1 and a stored tarball."""
    repo = tmp_path / "clones" / "tiny"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "README").write_text("tiny\n")
    (repo / "src").mkdir()
    (repo / "src" / "main.c").write_text("int main(void) { return 0; }\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    git(repo, "tag", "v1.0")
    (repo / "README").write_text("tiny 1.1\n")
    git(repo, "commit", "-q", "-am", "two")
    git(repo, "tag", "v1.1")
    # A release tarball kept as a file in git (like github.com/StanfordLegion/gasnet).
    (repo / "Tiny-0.9.tar.gz").write_bytes(b"\x1f\x8bnot really a tarball, just bytes\n")
    git(repo, "add", "Tiny-0.9.tar.gz")
    git(repo, "commit", "-q", "-m", "tarball")
    return repo.parent


def manifest(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "sources.tsv"
    path.write_text("# test manifest\n" + HEADER + "".join("\t".join(r) + "\n" for r in rows))
    return path


def row(clones: Path, version: str, sha: str = "", package: str = "tiny") -> tuple:
    return (package, version, "https://github.com/example/tiny.git", f"v{version}",
            f"tiny-{version}/", sha)


def run_mirror(sources: Path, clones: Path, out: Path, *extra: str):
    return commstack("mirror", "--sources", str(sources), "--clones", str(clones),
                     "--out", str(out), *extra)


def test_builds_github_identical_tarball_in_spack_layout(tmp_path, clones):
    sha = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    out = tmp_path / "mirror"
    proc = run_mirror(manifest(tmp_path, [row(clones, "1.0", sha)]), clones, out)
    assert proc.returncode == 0, proc.stderr
    assert re.match(rf"^added +tiny@1\.0  {sha}  ", proc.stdout), proc.stdout

    tarball = out / "tiny" / "tiny-1.0.tar.gz"
    assert hashlib.sha256(tarball.read_bytes()).hexdigest() == sha
    link = out / "_source-cache" / "archive" / sha[:2] / f"{sha}.tar.gz"
    assert link.is_symlink() and os.readlink(link) == "../../../tiny/tiny-1.0.tar.gz"
    assert link.resolve() == tarball.resolve()
    with tarfile.open(tarball) as tf:
        names = sorted(tf.getnames())
    assert names == ["tiny-1.0", "tiny-1.0/README", "tiny-1.0/src", "tiny-1.0/src/main.c"]


def test_a_pathspec_after_the_ref_leaves_a_file_out(tmp_path, clones):
    """flux-core's row: ``<tag> :(exclude)<path>`` archives the tag without that file (one the
    clone lacks), the same bytes as the shell pipeline with that pathspec."""
    ref = "v1.0 :(exclude)src/main.c"
    sha = subprocess.run(
        f"git -C '{clones / 'tiny'}' archive --format=tar --prefix=tiny-1.0/ v1.0 "
        "':(exclude)src/main.c' | gzip -n | sha256sum",
        shell=True, check=True, capture_output=True, text=True).stdout.split()[0]
    assert sha != github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    rows = [("tiny", "1.0-less", "https://github.com/example/tiny.git", ref, "tiny-1.0/", sha)]
    out = tmp_path / "mirror"
    proc = run_mirror(manifest(tmp_path, rows), clones, out)
    assert proc.returncode == 0, proc.stderr
    with tarfile.open(out / "tiny" / "tiny-1.0-less.tar.gz") as tf:
        assert sorted(tf.getnames()) == ["tiny-1.0", "tiny-1.0/README"]


def test_idempotent(tmp_path, clones):
    sha = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    sources, out = manifest(tmp_path, [row(clones, "1.0", sha)]), tmp_path / "mirror"
    assert run_mirror(sources, clones, out).returncode == 0
    tarball = out / "tiny" / "tiny-1.0.tar.gz"
    before = tarball.stat()
    again = run_mirror(sources, clones, out)
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith("present  tiny@1.0  "), again.stdout
    after = tarball.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(p.name for p in out.rglob("*")) == sorted(
        ["tiny", "tiny-1.0.tar.gz", "_source-cache", "archive", sha[:2], f"{sha}.tar.gz"]
    )


def test_refuses_to_overwrite_a_different_file(tmp_path, clones):
    sha = github_tarball_sha256(clones / "tiny", "v1.1", "tiny-1.1/")
    out = tmp_path / "mirror"
    squatter = out / "tiny" / "tiny-1.1.tar.gz"
    squatter.parent.mkdir(parents=True)
    squatter.write_bytes(b"something else")
    proc = run_mirror(manifest(tmp_path, [row(clones, "1.1", sha)]), clones, out)
    assert proc.returncode == 2
    assert f"refusing to overwrite existing different file: {squatter}" in proc.stderr
    assert squatter.read_bytes() == b"something else"
    assert not (out / "_source-cache").exists()


def test_refuses_a_source_cache_link_pointing_elsewhere(tmp_path, clones):
    sha = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    out = tmp_path / "mirror"
    link = out / "_source-cache" / "archive" / sha[:2] / f"{sha}.tar.gz"
    link.parent.mkdir(parents=True)
    os.symlink("../../../other/other-1.0.tar.gz", link)
    proc = run_mirror(manifest(tmp_path, [row(clones, "1.0", sha)]), clones, out)
    assert proc.returncode == 2
    assert f"refusing to overwrite existing symlink {link}" in proc.stderr
    assert os.readlink(link) == "../../../other/other-1.0.tar.gz"


def test_wrong_sha256_is_an_error_and_writes_nothing(tmp_path, clones):
    good = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    wrong = "0" * 64
    out = tmp_path / "mirror"
    proc = run_mirror(manifest(tmp_path, [row(clones, "1.0", wrong)]), clones, out)
    assert proc.returncode == 2
    assert f"sha256 is {good}, expected {wrong}" in proc.stderr
    assert "sources.tsv:3: tiny@1.0" in proc.stderr  # file:line of the row
    assert not (out / "tiny" / "tiny-1.0.tar.gz").exists()


def test_empty_sha256_reports_the_computed_one(tmp_path, clones):
    good = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    proc = run_mirror(manifest(tmp_path, [row(clones, "1.0")]), clones, tmp_path / "m")
    assert proc.returncode == 2
    assert f"empty sha256 column; this archive's sha256 is {good}" in proc.stderr


def test_stored_tarball_blob_and_package_filter(tmp_path, clones):
    repo = clones / "tiny"
    commit = git(repo, "rev-parse", "HEAD")
    blob = (repo / "Tiny-0.9.tar.gz").read_bytes()
    blob_sha = hashlib.sha256(blob).hexdigest()
    v10 = github_tarball_sha256(repo, "v1.0", "tiny-1.0/")
    sources = manifest(tmp_path, [
        row(clones, "1.0", v10),
        ("tiny-release", "0.9", "https://github.com/example/tiny", f"{commit}:Tiny-0.9.tar.gz",
         "-", blob_sha),
    ])
    out = tmp_path / "mirror"
    proc = run_mirror(sources, clones, out, "--package", "tiny-release")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("\n") == 1 and "tiny-release@0.9" in proc.stdout
    stored = out / "tiny-release" / "tiny-release-0.9.tar.gz"
    assert stored.read_bytes() == blob
    assert (out / "_source-cache" / "archive" / blob_sha[:2] / f"{blob_sha}.tar.gz").is_symlink()
    assert not (out / "tiny").exists()

    unknown = run_mirror(sources, clones, out, "--package", "nope")
    assert unknown.returncode == 2 and "no manifest rows for package(s): nope" in unknown.stderr


def test_missing_clone_names_it_and_other_rows_still_go_in(tmp_path, clones):
    v10 = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    sources = manifest(tmp_path, [
        ("ghost", "1.0", "https://github.com/example/ghost", "v1.0", "ghost-1.0/", "1" * 64),
        row(clones, "1.0", v10),
    ])
    out = tmp_path / "mirror"
    proc = run_mirror(sources, clones, out)
    assert proc.returncode == 2
    assert f"no clone at {clones / 'ghost'} (git clone --bare https://github.com/example/ghost" in proc.stderr
    assert (out / "tiny" / "tiny-1.0.tar.gz").is_file()


def test_git_dir_column_and_missing_ref(tmp_path, clones):
    v10 = github_tarball_sha256(clones / "tiny", "v1.0", "tiny-1.0/")
    path = tmp_path / "s.tsv"
    path.write_text(HEADER.rstrip("\n") + "\tgit_dir\n"
                    f"other\t1.0\thttps://example.org/x/other.git\tv1.0\ttiny-1.0/\t{v10}\ttiny\n"
                    f"other\t2.0\thttps://example.org/x/other.git\tv2.0\ttiny-2.0/\t{'2' * 64}\ttiny\n")
    proc = run_mirror(path, clones, tmp_path / "mirror")
    assert proc.returncode == 2
    assert "added    other@1.0" in proc.stdout
    assert "ref 'v2.0' not found in" in proc.stderr


@pytest.mark.parametrize("text, message", [
    ("", "empty manifest"),
    ("package\tversion\n", "missing ['git_url', 'ref', 'tar_prefix', 'sha256']"),
    (HEADER + "a\t1\tu\tr\tno-slash\t\n", "tar_prefix must end with '/'"),
    (HEADER + "a\t1\tu\tr\t-\t\n", "needs ref <commit>:<path>"),
    (HEADER + "a\t1\tu\tr\tp/\tABC\n", "sha256 must be 64 lower-case hex digits"),
    (HEADER + "a\t1\tu\tr\tp/\t\n" + "a\t1\tu\tr2\tp/\t\n", "a@1 is also on"),
    (HEADER + "a/b\t1\tu\tr\tp/\t\n", "bad package 'a/b'"),
])
def test_manifest_validation(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises(MirrorError, match=re.escape(message)):
        read_sources(path)


def test_shell_wrapper_keeps_its_interface(tmp_path, clones):
    repo = clones / "tiny"
    sha = github_tarball_sha256(repo, "v1.1", "tiny-1.1/")
    out = tmp_path / "mirror"
    cmd = [str(REPO / "scripts" / "mirror_from_git.sh"), "--git", str(repo), "--ref", "v1.1",
           "--prefix", "tiny-1.1/", "--package", "tiny", "--version", "1.1", "--mirror", str(out)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # must work from a checkout
    first = subprocess.run(cmd + ["--sha256", sha], capture_output=True, text=True, env=env)
    assert first.returncode == 0, first.stderr
    assert first.stdout == sha + "\n"
    again = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert again.returncode == 0 and again.stdout == sha + "\n"
    assert "already present and identical" in again.stderr
    bad = subprocess.run(cmd + ["--sha256", "f" * 64], capture_output=True, text=True, env=env)
    assert bad.returncode != 0 and f"sha256 is {sha}, expected {'f' * 64}" in bad.stderr
    (out / "tiny" / "tiny-1.1.tar.gz").unlink()
    (out / "tiny" / "tiny-1.1.tar.gz").write_bytes(b"x")
    clash = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert clash.returncode != 0 and "refusing to overwrite existing different file" in clash.stderr
    noprefix = subprocess.run(cmd[:6] + ["tiny-1.1"] + cmd[7:], capture_output=True, text=True,
                              env=env)
    assert noprefix.returncode != 0 and "must end with '/'" in noprefix.stderr


def test_project_manifest_matches_the_recipes():
    """Each row of packages/mirror-sources.tsv whose package (or a package built from the same
    tarball) has a recipe in packages/ carries the sha256 that recipe gives that version (or one
    of its resources)."""
    sources = read_sources(REPO / "packages" / "mirror-sources.tsv")
    recipes = {p.parent.name: p.read_text() for p in (REPO / "packages").glob("*/package.py")}
    also = {"gasnet": "gasnet-tests"}  # builtin gasnet's tarballs, which gasnet-tests also uses
    checked = 0
    for src in sources:
        for name in (src.package, also.get(src.package)):
            text = recipes.get(name or "")
            if text is None:
                continue
            m = re.search(rf'version\(\s*"{re.escape(src.version)}",[^)]*?sha256="([0-9a-f]{{64}})"',
                          text)
            if m:
                assert m.group(1) == src.sha256, f"{name}@{src.version}: manifest and recipe differ"
            elif "from spack_repo.builtin.packages." in text and src.sha256 not in text:
                continue  # an overlay of a builtin recipe: other versions are builtin's
            else:  # a resource's tarball
                assert src.sha256 in text, f"{name}: no version {src.version} nor its sha256"
            checked += 1
    assert checked >= 9
    assert {("compiler-wrapper", "1.1.0"), ("intel-mpi-benchmarks", "2021.11")} <= {
        (s.package, s.version) for s in sources}


def _debian_download(directory: Path, orig: bytes, listed_sha: str) -> None:
    """What `apt-get source --download-only` leaves: the .orig tarball next to its .dsc."""
    directory.mkdir(parents=True)
    (directory / "tiny_1.0.orig.tar.xz").write_bytes(orig)
    (directory / "tiny_1.0-1.dsc").write_text(
        "Format: 3.0 (quilt)\nSource: tiny\nChecksums-Sha256:\n"
        f" {listed_sha} {len(orig)} tiny_1.0.orig.tar.xz\n"
        f" {'0' * 64} 10 tiny_1.0-1.debian.tar.xz\n")


def test_file_source_from_a_debian_source_package(tmp_path, clones):
    orig = b"\xfd7zXZ\x00 pretend upstream release, recompressed\n"
    sha = hashlib.sha256(orig).hexdigest()
    _debian_download(clones / "debian-tiny-1.0-1", orig, sha)
    url = "https://deb.debian.org/debian/pool/main/t/tiny/tiny_1.0-1.dsc"
    path = tmp_path / "s.tsv"
    path.write_text(HEADER.rstrip("\n") + "\tgit_dir\n"
                    f"tiny\t1.0-debian\t{url}\ttiny_1.0.orig.tar.xz\tfile\t{sha}\tdebian-tiny-1.0-1\n")
    out = tmp_path / "mirror"
    proc = run_mirror(path, clones, out)
    assert proc.returncode == 0, proc.stderr
    stored = out / "tiny" / "tiny-1.0-debian.tar.xz"
    assert stored.read_bytes() == orig
    assert os.readlink(out / "_source-cache" / "archive" / sha[:2] / f"{sha}.tar.xz") == (
        "../../../tiny/tiny-1.0-debian.tar.xz")

    # The .dsc must vouch for the file: a tampered download is refused, nothing written.
    (clones / "debian-tiny-1.0-1" / "tiny_1.0.orig.tar.xz").write_bytes(orig + b"x")
    other = tmp_path / "mirror2"
    bad = run_mirror(path, clones, other)
    assert bad.returncode == 2
    assert "tiny_1.0-1.dsc does not list tiny_1.0.orig.tar.xz with sha256" in bad.stderr
    assert not (other / "tiny").exists()

    (clones / "debian-tiny-1.0-1" / "tiny_1.0-1.dsc").unlink()
    gone = run_mirror(path, clones, other)
    assert gone.returncode == 2 and "no " in gone.stderr and "tiny_1.0-1.dsc next to" in gone.stderr


def test_file_source_validation_and_missing_directory(tmp_path, clones):
    with pytest.raises(MirrorError, match="needs ref relative to its directory"):
        (tmp_path / "a.tsv").write_text(HEADER + "a\t1\tu\t../x.tar.xz\tfile\t\n")
        read_sources(tmp_path / "a.tsv")
    with pytest.raises(MirrorError, match="cannot tell the archive type"):
        (tmp_path / "b.tsv").write_text(HEADER + "a\t1\tu\tx.dsc\tfile\t\n")
        read_sources(tmp_path / "b.tsv")
    path = manifest(tmp_path, [("a", "1", "https://example.org/a_1-1.dsc", "a_1.orig.tar.gz",
                                "file", "1" * 64)])
    proc = run_mirror(path, clones, tmp_path / "mirror")
    assert proc.returncode == 2
    assert f"no directory at {clones / 'a_1-1.dsc'} (download https://example.org/a_1-1.dsc" in proc.stderr
