"""What ran where: host, CPU, topology, MPI and UCX versions, git commit, Spack specs, UCX vars.

Collected once per session (campaign-level, saved under sessions/<id>/) and per record
(the UCX variables each point set, and what UCX said about them).
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Tuple

import commstack
from commstack import flavours
from commstack.launch.command import LaunchCommand
from commstack.launch.stack import ResolvedStack

SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "KEY", "CREDENTIAL",
                "AUTH", "COOKIE", "PRIVATE", "SESSION")
# (?<!\w): a scheme starts a word (without it, a long word is searched quadratically)
_URL_CREDENTIALS = re.compile(r"(?<!\w)(\w+://)[^/@\s:]+:[^/@\s]+@")


def scrub_env(env: Dict[str, str]) -> Dict[str, str]:
    """Drop variables whose names suggest secrets; mask credentials inside URLs."""
    clean = {}
    for name, value in env.items():
        if any(word in name.upper() for word in SECRET_WORDS):
            continue
        clean[name] = _URL_CREDENTIALS.sub(r"\1***@", value)
    return clean


def scrubbed_shell(command: LaunchCommand) -> str:
    """The launch line as recorded: the command's own, with secret-named variables left out."""
    return LaunchCommand(command.argv, scrub_env(command.env), command.prepends).shell()


def _capture(argv: List[str], env: Optional[Dict[str, str]] = None, timeout: float = 30) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"<{argv[0]} failed: {exc}>"
    return proc.stdout + (proc.stderr if proc.returncode else "")


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def git_commit(start: Path) -> Optional[str]:
    out = _capture(["git", "-C", str(start), "rev-parse", "HEAD"])
    if not re.fullmatch(r"[0-9a-f]{40}\s*", out):
        return None
    dirty = _capture(["git", "-C", str(start), "status", "--porcelain", "--untracked-files=no"])
    return out.strip() + ("-dirty" if dirty.strip() else "")


def spack_specs(root: Optional[str]) -> List[dict]:
    """Name, version and hash of the Spack packages in a view (<view>/.spack/<name>/spec.json)
    or an install prefix (<prefix>/.spack/spec.json), if any."""
    if not root:
        return []
    meta = Path(root) / ".spack"
    candidates = [meta / "spec.json"] + sorted(meta.glob("*/spec.json")) if meta.is_dir() else []
    specs: List[dict] = []
    for path in candidates:
        if path.is_file():
            try:
                data = json.loads(path.read_text())
                for node in data.get("spec", {}).get("nodes", [])[:1]:
                    specs.append({"name": node.get("name"), "version": node.get("version"),
                                  "hash": node.get("hash")})
            except (OSError, ValueError):
                continue
    return specs


def executable_spack_spec(executable: str) -> Optional[dict]:
    """The Spack package that installed an executable (views hold symlinks into prefixes)."""
    prefix = Path(executable).resolve().parent.parent
    found = spack_specs(str(prefix))
    return found[0] if found else None


def mpi_info(stack: ResolvedStack) -> Dict[str, str]:
    """Version text of the stack's MPI (and UCX), keyed by output file name."""
    env = stack.full_env()
    path = env["PATH"]
    # Debian suffixes each MPI's tools when several are installed: mpirun.openmpi, ompi_info...
    launcher = Path(stack.launcher).name
    suffix = launcher[len("mpirun"):] if launcher.startswith("mpirun.") else ""
    out: Dict[str, str] = {}
    for version_tool in stack.kind.version_tools:
        name, (tool, *args) = version_tool.file, version_tool.argv
        if tool == "{launcher}":
            exe = stack.launcher
        else:
            exe = shutil.which(tool + suffix, path=path) or shutil.which(tool, path=path)
        out[name] = _capture([exe, *args], env) if exe else f"<{tool} not found>"
    # A simulated MPI uses no UCX: a ucx_info on the PATH is this host's, not the stack's.
    exe = None if stack.kind.simulated else shutil.which("ucx_info", path=path)
    if exe:
        out["ucx_info.txt"] = _capture([exe, "-v"], env)
    return out


def known_ucx_variables(stack: ResolvedStack) -> Optional[set]:
    """Every UCX_* variable this UCX knows (ucx_info -c -a), or None without ucx_info."""
    env = stack.full_env()
    exe = shutil.which("ucx_info", path=env["PATH"])
    if not exe:
        return None
    text = _capture([exe, "-c", "-a"], env)
    names = set(re.findall(r"^(UCX_[A-Z0-9_]+)=", text, re.M))
    return names or None


def session_info(stacks: Iterable[ResolvedStack], executables: Iterable[str], repo: Path,
                 matrix: Path) -> dict:
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpus_available": len(os.sched_getaffinity(0)),
        "python": sys.version.split()[0],
        "commstack_version": commstack.__version__,
        "git_commit": git_commit(repo),  # of commstack itself
        "matrix_git_commit": git_commit(matrix.resolve().parent),  # of the repo holding the matrix
        "argv": sys.argv,
        "environment": scrub_env(dict(os.environ)),
        "stacks": {
            s.name: {"flavour": s.flavour, "launcher": s.launcher, "root": s.stack.root,
                     "spack": spack_specs(s.stack.root)}
            for s in stacks
        },
        "executables": {exe: {"spack": executable_spack_spec(exe)} for exe in sorted(executables)},
    }


def topology_xml() -> Tuple[Optional[str], str]:
    """hwloc's XML of this node, and what a record says about it: where it was captured from,
    or why it was not (then the XML is None)."""
    exe = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if not exe:
        return None, "not captured (lstopo not found; install hwloc)"
    text = _capture([exe, "--of", "xml", "-"])
    if not text.lstrip().startswith("<?xml"):
        return None, f"not captured ({Path(exe).name} failed: {text.strip()[:200]})"
    return text, f"captured by {Path(exe).name}"


# --- per record: what UCX said about the variables -----------------------------------------
_UNUSED = re.compile(r"unused env(?:ironment)? variables?:\s*(.+?)(?:\s*\(set UCX_WARN|$)", re.M)
_ENDPOINT = re.compile(r"\[[\d.]+\]\s+\[[^:\]]+:(\d+)\s*:\d+\].*ep_cfg\[\d+\]:\s*(.*)$", re.M)
_REPORTED = re.compile(r"\[[\d.]+\]\s+\[[^:\]]+:(\d+)\s*:\d+\].*UCX_\* env variables:\s*(.*)$", re.M)


def ucx_evidence(flavour: str, env: Dict[str, str], output: str,
                 conduit: Optional[str] = None) -> Optional[str]:
    """Why we know the run used UCX (so UCX read its UCX_* variables), or None: UCX's own output,
    or what the flavour was told to use and fails without (commstack.flavours)."""
    if _REPORTED.search(output) or _UNUSED.search(output):
        return "UCX printed its variables in the run's output"
    return flavours.get(flavour).ucx_evidence(env, conduit) if flavour else None


def ucx_report(env: Dict[str, str], output: str, known: Optional[set],
               flavour: str = "", conduit: Optional[str] = None) -> dict:
    """UCX variables set for a point: those confirmed in effect, those UCX did not recognise,
    those set but unchecked (with why), and what the ranks reported.

    A variable is "in effect" only when the run used UCX (``ucx_evidence``), this UCX's
    ``ucx_info -c -a`` lists it and UCX did not call it unused; a name ``ucx_info`` does not
    list is "unrecognised" whether or not the run used UCX."""
    set_vars = {k: v for k, v in env.items() if k.startswith("UCX_")}
    unused = sorted({name for m in _UNUSED.finditer(output)
                     for name in re.findall(r"UCX_[A-Z0-9_]+", m.group(1))})
    evidence = ucx_evidence(flavour, env, output, conduit)
    unknown = sorted(k for k in set_vars if known is not None and k not in known)
    unrecognised = sorted(set(unused) | set(unknown))
    if not set_vars:
        unchecked_reason = None
    elif not evidence:
        unchecked_reason = "no evidence that this run used UCX (the stack may not use it)"
    elif known is None:
        unchecked_reason = "ucx_info not found: variable names could not be checked"
    else:
        unchecked_reason = None
    confirmed = not unchecked_reason
    by_rank = {}
    for m in _REPORTED.finditer(output):
        pairs = dict(item.split("=", 1) for item in m.group(2).split() if "=" in item)
        by_rank[m.group(1)] = pairs
    endpoints: Dict[str, List[str]] = {}
    for m in _ENDPOINT.finditer(output):
        endpoints.setdefault(m.group(1), []).append(m.group(2).strip())
    return {
        "set": set_vars,
        "uses_ucx": evidence,  # why we know UCX ran, or None
        "in_effect": {k: v for k, v in set_vars.items() if confirmed and k not in unrecognised},
        "unrecognised": unrecognised,
        "unchecked": {k: v for k, v in set_vars.items() if not confirmed and k not in unrecognised},
        "unchecked_reason": unchecked_reason,
        "unused_reported": unused,
        "reported_by_process": by_rank,  # UCX_LOG_LEVEL=info: "UCX_* env variables: ..."
        "endpoints_by_process": endpoints,  # UCX_LOG_LEVEL=info: "ep_cfg[N]: tag(self/memory ...)"
    }
