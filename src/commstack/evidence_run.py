"""Which collective components served a run: the flavour's reading of the run's own output, or of
an evidence run (the point run once more with the variables that make the MPI name them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Dict, Optional

from commstack.launch import runner
from commstack.launch.command import LaunchCommand
from commstack.plan import PreparedPoint
from commstack.store.campaign import Campaign
from commstack.store.files import write_new_json


def components_used(prepared: PreparedPoint, command: LaunchCommand, stderr: str
                    ) -> Optional[Dict[str, object]]:
    """The flavour's reading of which component served the benchmark's collectives (IMB's
    ``benchmarks`` list names them)."""
    listed = prepared.point.get("benchmarks")
    names = str(listed).replace(",", " ").split() if listed else None
    return prepared.stack.kind.components_used(command.full_env(), stderr, names)


def evidence_run(campaign: Campaign, session: Path, prepared: PreparedPoint,
                 timeout: float) -> Optional[Dict[str, object]]:
    """Run the point once more with the variables that make the MPI name the collective
    components it used, under points/<id>/evidence/<session>/, and read them. Its timings are not
    a result (the evidence costs time in every call); the timed records cite it as their source."""
    assert prepared.evidence is not None
    folder = campaign.point_dir(prepared.point.id) / "evidence" / session.name
    folder.mkdir(parents=True, exist_ok=True)
    flavour = prepared.stack.kind
    command = prepared.evidence.placed(folder)
    command = dataclasses.replace(command, argv=flavour.evidence_argv(command.argv, folder))
    stdout, stderr = folder / "stdout.txt", folder / "stderr.txt"
    outcome = runner.run(command, stdout, stderr, timeout, cwd=folder)
    text = flavour.evidence_stderr(folder, stderr.read_text(errors="replace"))
    used = components_used(prepared, command, text)
    if used is not None:
        where = f"points/{prepared.point.id}/evidence/{session.name}"
        added = " ".join(f"{k}={v}" for k, v in sorted(prepared.evidence.env.items())
                         if prepared.command.env.get(k) != v)
        used["source"] = (f"evidence run {where} (this point's command plus {added}; "
                          f"{outcome.status}, exit {outcome.exit_code}): {used['source']}")
        if outcome.status != "ok":
            used["not_used"] = []
            used["not_reported"] = f"the evidence run ended {outcome.status}: see {where}"
    write_new_json(folder / "evidence.json", {"command": command.shell(),
                                              "status": outcome.status,
                                              "exit_code": outcome.exit_code,
                                              "components_used": used})
    return used


def evidence_summary(used: Optional[Dict[str, object]]) -> str:
    if not used:
        return "no evidence"
    collectives = used.get("collectives") or {}
    return ", ".join(f"{c}: {'/'.join(v)}" for c, v in collectives.items()) or "no collective named"
