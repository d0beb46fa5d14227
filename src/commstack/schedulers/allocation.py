"""The allocation this process runs in, whichever scheduler made it, and its deadline."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import ClassVar, List, Optional


@dataclass
class Allocation:
    """An allocation: its job, nodes, partition, deadline and CPUs per node."""

    job_id: str
    nodes: List[str] = field(default_factory=list)
    partition: Optional[str] = None
    deadline: Optional[float] = None  # epoch seconds; None when unlimited or unknown
    cpus_per_node: Optional[int] = None  # the fewest CPUs the job holds on one of its nodes
    # The scheduler that made it (registry name); None: the machine's, else the default one.
    scheduler: ClassVar[Optional[str]] = None

    def remaining_s(self) -> Optional[float]:
        return None if self.deadline is None else self.deadline - time.time()
