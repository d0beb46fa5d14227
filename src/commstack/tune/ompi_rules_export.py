"""The Open MPI coll/tuned rules file a tuning exports, and the lines that point at it.

A tuned ``mca.coll_tuned_<op>_algorithm`` with a per-size value (commstack.tune.per_size) is
launched as coll/tuned's rules file (commstack.flavours.ompi_coll_rules). ``tuned/`` gets the
file the verify's own runs of that value used, byte for byte, and ``ucx.env`` points Open MPI at
it from wherever it is sourced (the file finds its own directory). ``mca-params.conf`` cannot:
Open MPI takes a path in it as written, relative to each process's working directory, and
expands no variables there (tried on 4.1.4), so it switches the rules on and leaves the path to
``ucx.env`` or to the user.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, List, Tuple

from commstack.flavours import ompi_coll_rules as rules
from commstack.matrix.model import MatrixError
from commstack.store.campaign import Campaign

FILE_NAME = rules.FILE_NAME


def per_size(settings: Dict[str, Any]) -> Dict[str, str]:
    """The settings that are per-size coll/tuned algorithm values (launched as a rules file)."""
    return {name: str(value) for name, value in settings.items()
            if name.startswith("mca.") and rules.operation(name[4:]) and rules.is_per_size(value)}


def measured_file(verify_dir: Path, settings: Dict[str, Any]) -> Tuple[bytes, str]:
    """The rules file of the verify's successful runs of ``settings``' per-size values, and where
    it is (relative to ``verify_dir``); MatrixError when none has one or two differ."""
    wanted = per_size(settings)
    found: Dict[bytes, str] = {}
    campaign = Campaign(verify_dir)
    for folder in sorted(p.name for p in (verify_dir / "points").glob("*") if p.is_dir()):
        for attempt in campaign.attempts(folder):
            record = attempt.record()
            path = attempt.path / FILE_NAME
            if (record is None or not record.ok or not path.is_file()
                    or any(str(record.params.get(k)) != v for k, v in wanted.items())):
                continue
            found.setdefault(path.read_bytes(), str(path.relative_to(verify_dir)))
    shown = ", ".join(f"{k}={v}" for k, v in wanted.items())
    if not found:
        raise MatrixError(f"{verify_dir}: no successful verify run of {shown} holds its "
                          f"{FILE_NAME}, so there is no measured rules file to export")
    if len(found) > 1:
        raise MatrixError(f"{verify_dir}: the verify runs of {shown} used different rules files "
                          f"({', '.join(sorted(found.values()))}); tune into a new campaign")
    ((text, where),) = found.items()
    return text, where


def rendered_file(directory: Path, settings: Dict[str, Any]) -> bytes:
    """The rules file of ``settings``' per-size values for the rank count the case's steps ran,
    as a launch would write it: for a case whose verify could not run (a simulated stack)."""
    ranks = next((r.ranks for step in sorted(directory.glob("*/matrix.yaml"))
                  for r in Campaign(step.parent).records() if r.ok and r.ranks), None)
    if ranks is None:
        raise MatrixError(f"{directory}: no successful run says how many ranks the case had, "
                          "so its rules file cannot be written")
    env = {rules.MCA + name[4:]: str(value) for name, value in settings.items()
           if name.startswith("mca.")}
    choices = [rules.choice(rules.MCA + name[4:], value, env)
               for name, value in sorted(per_size(settings).items())]
    return rules.render(choices, ranks).encode()


def _comment(settings: Dict[str, Any]) -> List[str]:
    return [f"# {name} = {value} (per message size): Open MPI coll/tuned's rules file "
            f"{FILE_NAME} beside this file, as the verify ran it" for name, value in
            per_size(settings).items()]


def env_lines(settings: Dict[str, Any]) -> List[str]:
    """ucx.env's lines: the rules file found beside ucx.env wherever it is sourced (bash, zsh;
    a shell that does not say which file it sources gets a warning instead of a wrong path)."""
    if not per_size(settings):
        return []
    return _comment(settings) + [
        '_commstack_dir=$(cd "$(dirname -- "${BASH_SOURCE:-$0}")" && pwd)',
        f"export {rules.USE_RULES}=1",
        f'export {rules.RULES_FILE}="$_commstack_dir/{FILE_NAME}"',
        "unset _commstack_dir",
        f'[ -r "${rules.RULES_FILE}" ] || echo "ucx.env: no ${rules.RULES_FILE}: source '
        'ucx.env by its path from bash or zsh, or set the variable to the rules file" >&2',
    ]


def mca_lines(settings: Dict[str, Any]) -> List[str]:
    """mca-params.conf's lines: the rules switched on, the path left to ucx.env or the user."""
    if not per_size(settings):
        return []
    name = rules.RULES_FILE[len(rules.MCA):]
    return _comment(settings) + [
        f"{rules.USE_RULES[len(rules.MCA):]} = 1",
        "# Open MPI takes the rules file's path below as written (relative to each process's",
        "# working directory, no variables): ucx.env sets it (the environment overrides this",
        "# file), or write the file's absolute path here.",
        f"# {name} = /absolute/path/to/{FILE_NAME}",
    ]
