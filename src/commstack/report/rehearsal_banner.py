"""The banner over a rehearsal's report: whose campaign it stands for, at what scale, and every
substitution made (`commstack rehearse` writes rehearsal.json at the rehearsal's root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

# A tuning rehearsal's step campaigns lie two levels below the file.
LEVELS = 3


def rehearsal_file(campaign_root: Path) -> Optional[Path]:
    for folder in [campaign_root, *campaign_root.parents][:LEVELS]:
        if (folder / "rehearsal.json").is_file():
            return folder / "rehearsal.json"
    return None


def banner(campaign_root: Path) -> List[str]:
    path = rehearsal_file(campaign_root)
    if path is None:
        return []
    info = json.loads(path.read_text())
    if info.get("simulated"):
        lines = [f"> **Simulated rehearsal, not a measurement of {info['machine']}.** "
                 f"`{Path(info['source']).name}` run at its own node and rank counts on the "
                 "machine as SimGrid SMPI simulates it (repetitions cut, one repeat, knobs SMPI "
                 "cannot simulate left out). Its numbers show that every point runs and parses "
                 "at this scale, and what the model predicts; they are not the machine's.", ">"]
    else:
        lines = [f"> **Rehearsal, not a measurement of {info['machine']}.** "
                 f"`{Path(info['source']).name}` run at small scale on "
                 f"{_test_machine(info)} (nodes, ranks, sizes and iterations cut down; local stacks for the "
                 "machine's). Its numbers show that every point shape runs and parses; they say "
                 "nothing about the machine.", ">"]
    lines += [f"> - {note}" for note in info.get("notes", [])]
    return lines + [""]


def _test_machine(info: dict) -> str:
    """The local test machine a rehearsal ran on, as its machine.yaml describes it (rehearsals
    written before they said so ran on the three-node test cluster)."""
    if info.get("on"):
        described = info.get("on_description")
        return f"`{info['on']}`" + (f" ({described})" if described else "")
    return "the three-node test cluster (`slurm-ci`)"
