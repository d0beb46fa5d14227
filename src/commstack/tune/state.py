"""What a step campaign's campaign.json says about the tuning it belongs to (its ``tune``).

``commstack tune`` writes it once, when it creates the campaign of a step (or of the verify, or
of a step's refined sizes); the report reads it back: only such campaigns get the tuning
study's sections, with this incumbent as the default every candidate must beat, by this rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional

from commstack.errors import CampaignError
from commstack.tune.decide import Rule

KEY = "tune"  # campaign.json's key of the state
VERIFY = "verify"  # the step name of a case's verify campaign: tuned vs default


@dataclass(frozen=True)
class TuneState:
    plan: str                    # the plan's file
    case: Dict[str, Any]
    step: str                    # the step's name, or VERIFY
    index: int                   # its place in the plan (verify: number of steps + 1)
    steps: List[str]             # the names of the case's steps
    axes: List[str]              # the parameters the campaign tunes, in the plan's order
    incumbent: Dict[str, Any]    # the default every candidate must beat
    rule: Rule
    skipped: Optional[List[Dict[str, Any]]] = None  # a step's settings the stack cannot run
    incumbent_from: Optional[Dict[str, Any]] = None  # a carried incumbent (tune.carry)
    refine: bool = False         # the campaign of a step's refined sizes (tune.sizes)

    @property
    def verify(self) -> bool:
        return self.step == VERIFY

    def as_dict(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"plan": self.plan, "case": self.case, "step": self.step,
                               "index": self.index, "steps": self.steps, "axes": self.axes,
                               "incumbent": self.incumbent, "decision": self.rule.as_dict()}
        if self.skipped is not None:
            out["skipped"] = self.skipped
        if self.incumbent_from is not None:
            out["incumbent_from"] = self.incumbent_from
        if self.refine:
            out["refine"] = True
        return out

    @classmethod
    def from_dict(cls, raw: Any, where: Path) -> "TuneState":
        """The state as ``where`` (a campaign.json) holds it; a damaged one ends in a
        CampaignError naming the file. The incumbent comes back in the order of the axes (the
        file keeps its keys sorted); a campaign tuned before the rank-test rule (``noise``,
        ``min_gain``) is judged by today's rule."""
        if not isinstance(raw, dict):
            raise CampaignError(f"{where}: tune: expected a mapping, got {type(raw).__name__}")
        incumbent = _typed(raw, "incumbent", dict, where, required=True)
        decision = _typed(raw, "decision", dict, where) or {}
        axes = _typed(raw, "axes", list, where) or []
        known = {k: decision[k] for k in ("threshold", "alpha", "correction", "allow_losses")
                 if k in decision}
        if any(not isinstance(known.get(k, 0), (int, float)) for k in ("threshold", "alpha")):
            raise CampaignError(f"{where}: tune.decision: threshold and alpha must be numbers")
        try:
            index = int(raw.get("index", 1))
        except (TypeError, ValueError):
            raise CampaignError(f"{where}: tune.index: expected a number, got "
                                f"{raw.get('index')!r}") from None
        order = [a for a in axes if a in incumbent] + [k for k in incumbent if k not in axes]
        return cls(str(raw.get("plan", "")), _typed(raw, "case", dict, where) or {},
                   str(raw.get("step")), index,
                   [str(s) for s in _typed(raw, "steps", list, where) or []],
                   [str(a) for a in axes], {k: incumbent[k] for k in order}, Rule(**known),
                   _typed(raw, "skipped", list, where), _typed(raw, "incumbent_from", dict, where),
                   bool(raw.get("refine", False)))


def _typed(raw: Dict[str, Any], key: str, kind: type, where: Path, required: bool = False
           ) -> Any:
    """``raw[key]`` when it is a ``kind``, None when it is absent and not ``required``."""
    value = raw.get(key)
    if isinstance(value, kind) or (value is None and not required):
        return value
    what = "a mapping" if kind is dict else "a list"
    raise CampaignError(f"{where}: tune.{key}: expected {what}, got {value!r}")


def of_campaign(info: Dict[str, Any], where: Path) -> Optional[TuneState]:
    """The state of a campaign.json's content ``info``, None when it is not a tuning's."""
    raw = info.get(KEY)
    return None if raw is None else TuneState.from_dict(raw, where)
