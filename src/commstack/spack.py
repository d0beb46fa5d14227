"""Find Spack and a source mirror, and install a Spack environment offline.

Used by the Spack tests and by scripts/quickstart.sh (`python -m commstack.spack ...`).

Conventions (all outside the repository):

* Spack: ``$COMMSTACK_SPACK`` (path to the ``spack`` executable), else ``spack`` on ``PATH``,
  else ``~/.cache/commstack/spack/bin/spack``.
* Source mirror: ``$COMMSTACK_SPACK_MIRROR``, else ``~/.cache/commstack/mirror``; it must contain
  ``_source-cache`` (``scripts/setup_spack.sh`` builds it with ``commstack mirror``).
  site-configs/local names the same one (include.yaml), so environments/local finds it too.
* Spack runs with ``SPACK_DISABLE_LOCAL_CONFIG=1`` and private user config/cache paths under
  ``~/.cache/commstack`` so nothing is read from or written to ``~/.spack``. The builtin package
  repository must therefore be registered in Spack's *site* scope
  (``spack repo set --scope site --destination <spack-packages clone> builtin``).
* Concretized lockfiles are cached in ``~/.cache/commstack/spack-locks`` keyed by the
  environment file and the configuration files it includes, this checkout's recipes, the Spack
  version and the package repositories' git commits, so a new
  pytest session does not pay for a fresh solve. Delete that directory to force one.

An environment (a directory with ``spack.yaml``) is always copied to a work directory before
use (Spack writes ``.spack-env/`` and ``spack.lock`` next to ``spack.yaml``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

#: Timeout for one Spack command (concretize or install).
SPACK_TIMEOUT = 1200


def cache_root() -> Path:
    """``~/.cache/commstack``: where the Spack clone, mirror and private Spack state live."""
    return Path.home() / ".cache" / "commstack"


def default_spack() -> Path:
    return cache_root() / "spack" / "bin" / "spack"


def default_mirror() -> Path:
    return cache_root() / "mirror"


def find_spack() -> Optional[Path]:
    """The Spack executable: $COMMSTACK_SPACK, else ``spack`` on PATH, else the default clone."""
    env = os.environ.get("COMMSTACK_SPACK")
    if env:
        p = Path(env).expanduser()
        return p if p.is_file() and os.access(p, os.X_OK) else None
    on_path = shutil.which("spack")
    if on_path:
        return Path(on_path)
    p = default_spack()
    return p if p.is_file() and os.access(p, os.X_OK) else None


def find_mirror() -> Optional[Path]:
    """The source mirror root ($COMMSTACK_SPACK_MIRROR or the default); must hold _source-cache."""
    env = os.environ.get("COMMSTACK_SPACK_MIRROR")
    p = Path(env).expanduser() if env else default_mirror()
    return p.resolve() if (p / "_source-cache").is_dir() else None


def spack_skip_reason() -> Optional[str]:
    """A pytest skip message if Spack or the mirror is missing, else None."""
    if find_spack() is None:
        where = os.environ.get("COMMSTACK_SPACK") or default_spack()
        return (
            f"skipped: no spack (set COMMSTACK_SPACK, or bash scripts/setup_spack.sh installs it "
            f"at {where}; see docs/reference/testing.md, Spack tests)"
        )
    if find_mirror() is None:
        where = os.environ.get("COMMSTACK_SPACK_MIRROR") or default_mirror()
        return (
            f"skipped: no spack mirror (set COMMSTACK_SPACK_MIRROR, or bash "
            f"scripts/setup_spack.sh builds it at {where})"
        )
    return None


def spack_environ() -> Dict[str, str]:
    """The process environment Spack is run with (isolated from ~/.spack)."""
    env = dict(os.environ)
    mirror = find_mirror()
    if mirror is not None:
        env["COMMSTACK_SPACK_MIRROR"] = str(mirror)  # expanded by the env's mirrors: url
    env.setdefault("COMMSTACK_REPO", str(Path(__file__).resolve().parents[2]))  # repos: path
    env["SPACK_DISABLE_LOCAL_CONFIG"] = "1"
    env.setdefault("SPACK_USER_CONFIG_PATH", str(cache_root() / "spack-user-config"))
    env.setdefault("SPACK_USER_CACHE_PATH", str(cache_root() / "spack-user-cache"))
    env.pop("SPACK_ENV", None)  # never act on an environment the caller has activated
    # Spack runs on the first python3 in PATH; inside a venv that may lack clingo (the solver).
    if "SPACK_PYTHON" not in env and importlib.util.find_spec("clingo") is not None:
        env["SPACK_PYTHON"] = sys.executable
    return env


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def run_spack(args: List[str], timeout: int = SPACK_TIMEOUT) -> str:
    """Run ``spack <args>``; return combined output or raise RuntimeError with its tail."""
    spack = find_spack()
    if spack is None:
        raise RuntimeError(spack_skip_reason() or "no spack")
    cmd = [str(spack), *args]
    try:
        proc = subprocess.run(
            cmd,
            env=spack_environ(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout if isinstance(exc.stdout, str) else (exc.stdout or b"").decode()
        raise RuntimeError(
            f"timed out after {timeout} s: {' '.join(cmd)}\n--- output tail ---\n{_tail(out)}"
        ) from None
    if proc.returncode != 0:
        raise RuntimeError(
            f"failed (exit {proc.returncode}): {' '.join(cmd)}\n"
            f"--- output tail ---\n{_tail(proc.stdout)}"
        )
    return proc.stdout


def _git_head(path: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(path), "rev-parse", "HEAD"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            timeout=30,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def included_files(env_src: Path) -> List[Tuple[str, Path]]:
    """The configuration files ``env_src/spack.yaml`` includes (``include:``; a folder: every
    YAML file under it), with $COMMSTACK_* expanded and relative paths from ``env_src``; each
    named by its include entry's position and its path inside that entry (not where the
    checkout is, so that clones elsewhere share a cached solve)."""
    import yaml

    data = yaml.safe_load(expand_commstack_vars((env_src / "spack.yaml").read_text())) or {}
    files: List[Tuple[str, Path]] = []
    for n, entry in enumerate((data.get("spack") or {}).get("include") or []):
        name = entry.get("path") if isinstance(entry, dict) else entry  # {path:, when:} or a path
        path = Path(os.path.expandvars(str(name))).expanduser()
        path = path if path.is_absolute() else env_src / path
        if path.is_dir():
            files.extend((f"{n}/{p.relative_to(path)}", p) for p in sorted(path.rglob("*.yaml")))
        elif path.is_file():
            files.append((f"{n}/{path.name}", path))
    return files


def source_digest(env_src: Path) -> bytes:
    """What a solve of ``env_src`` reads from files: its spack.yaml and the files it includes
    (an edited site config must not reuse an old solve)."""
    h = hashlib.sha256((env_src / "spack.yaml").read_bytes())
    for name, path in included_files(env_src):
        h.update(b"\0" + name.encode() + b"\0" + path.read_bytes())
    return h.digest()


def _lock_key(env_src: Path) -> str:
    """Key for the lockfile cache: environment file and the files it includes, Spack version,
    package repo commits, and the content of this checkout's recipes (edited recipes must not
    reuse an old solve)."""
    h = hashlib.sha256()
    h.update(source_digest(env_src))
    for recipe in sorted((Path(__file__).resolve().parents[2] / "packages").glob("*/*.py")):
        h.update(recipe.read_bytes())
    h.update(run_spack(["--version"], timeout=120).encode())
    for line in run_spack(["repo", "list"], timeout=120).splitlines():
        parts = line.split()
        if parts:
            h.update(line.encode())
            h.update(_git_head(Path(parts[-1])).encode())
    return h.hexdigest()[:16]


def expand_commstack_vars(text: str) -> str:
    """Replace $COMMSTACK_* variables by their values: Spack expands variables in some paths
    (mirror urls, repos) but not in an external's ``prefix``."""
    env = spack_environ()
    return re.sub(r"\$(COMMSTACK_[A-Z_]+)", lambda m: env.get(m.group(1), m.group(0)), text)


def install_env(env_src: Path, workdir: Path) -> Path:
    """Copy ``env_src/spack.yaml`` to ``workdir/<name>``, concretize and install it offline.

    Returns the environment directory (its default view is ``.spack-env/view``). Idempotent:
    a second call on the same workdir reuses the concretized environment and takes seconds.
    """
    src = env_src / "spack.yaml"
    envdir = Path(workdir) / env_src.name
    # The pristine spack.yaml and the digest of what it includes, to detect edits to either.
    marker = envdir / "spack.yaml.orig"
    pristine = src.read_bytes() + b"\n# included: " + source_digest(env_src).hex().encode() + b"\n"
    if not (marker.is_file() and marker.read_bytes() == pristine):
        if envdir.exists():
            shutil.rmtree(envdir)
        envdir.mkdir(parents=True)
        (envdir / "spack.yaml").write_text(expand_commstack_vars(src.read_text()))
        marker.write_bytes(pristine)

    lock = envdir / "spack.lock"
    cached: Optional[Path] = None  # only looked up when this work copy has no lockfile yet
    from_cache = False
    if not lock.is_file():
        cached = cache_root() / "spack-locks" / f"{env_src.name}-{_lock_key(env_src)}.lock"
        if cached.is_file():
            shutil.copyfile(cached, lock)
            from_cache = True

    def concretize_and_install() -> None:
        run_spack(["-e", str(envdir), "concretize"])
        run_spack(["-e", str(envdir), "install"])

    try:
        concretize_and_install()
    except RuntimeError as exc:
        if not from_cache:
            raise
        # A stale cached lockfile: drop it and solve afresh.
        assert cached is not None
        cached.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
        try:
            concretize_and_install()
        except RuntimeError as exc2:
            raise exc2 from exc
    if cached is not None and lock.is_file() and not cached.is_file():
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".tmp{os.getpid()}")
        shutil.copyfile(lock, tmp)
        os.replace(tmp, cached)
    return envdir


def install_view_bin(env_src: Path, workdir: Path, expect: str) -> Path:
    """Install an environment and return its view's bin directory, which must hold ``expect``;
    an ``expect`` with a slash is a path in the view (OSU installs in libexec/, not bin/) and
    its folder is returned."""
    envdir = install_env(env_src, Path(workdir))
    view = envdir / ".spack-env" / "view"
    found = view / expect if "/" in expect else view / "bin" / expect
    if not found.is_file():
        raise RuntimeError(f"spack install succeeded but {found} is missing")
    return found.parent


def installed_prefix(view_bin_file: Path) -> Path:
    """Install prefix of a file in a (symlink) view, e.g. ``<view>/bin/IMB-MPI1``."""
    return Path(view_bin_file).resolve().parent.parent


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m commstack.spack ENV_DIR [--workdir DIR] [--expect EXE]``: install offline and
    print the view's bin directory; exit 3 with the reason when Spack or the mirror is absent."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m commstack.spack", description=main.__doc__)
    ap.add_argument("env", type=Path, help="directory holding spack.yaml")
    ap.add_argument("--workdir", type=Path, default=cache_root() / "envs")
    ap.add_argument("--expect", default="IMB-MPI1",
                    help="executable the view's bin/ must provide, or a path in the view")
    args = ap.parse_args(argv)
    reason = spack_skip_reason()
    if reason:
        print(reason, file=sys.stderr)
        return 3
    try:
        print(install_view_bin(args.env, args.workdir, args.expect))
    except RuntimeError as exc:
        print(f"commstack.spack: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
