"""Calibrate a machine's simulation from its own measured ping-pongs (SimGrid's procedure).

`commstack machine calibrate CAMPAIGN` fits the IMB-MPI1 PingPong rows of a measured campaign
(every repeat) with SimGrid's segmented regression (pycewise) and prints the machine.yaml
`simulation:` lines: the link's latency and bandwidth (`--within node`: two ranks of one NUMA
domain; `network`: two nodes on one switch) and SMPI's per-size factors, each citing the
campaign as its source (commstack.machine.calibrate says how the fit becomes the factors). It
then prints, per message size, the measured median and what the fit gives.

exit status: 0 a calibration, 2 a user error (no such campaign, no PingPong rows, too few sizes,
pycewise not installed).
"""

from __future__ import annotations

import argparse
import statistics
from pathlib import Path
from typing import Dict, List


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("calibrate", help="fit a machine's simulation (SMPI's latency, bandwidth "
                       "and factors) to a campaign's measured ping-pongs", description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("campaign", type=Path, help="a campaign with measured IMB-MPI1 PingPong runs")
    p.add_argument("--stack", default=None, help="the stack whose rows to fit (default: the one)")
    p.add_argument("--within", choices=("node", "network"), default="node",
                   help="what the ping-pongs crossed: two ranks of one NUMA domain (node) or two "
                        "nodes on one switch (network)")
    p.add_argument("--source", default="calibration",
                   help="the key of simulation.sources the printed facts cite")


def execute(args: argparse.Namespace) -> int:
    from commstack.cli.common import existing_campaign
    from commstack.machine import calibrate

    root = existing_campaign(args.campaign)
    samples, what = calibrate.samples_of(root, args.stack)
    cal = calibrate.fit(samples, what)
    print(f"# {what}; fitted with pycewise (SimGrid's calibration), {len(cal.segments)} segments")
    print("simulation:")
    print(calibrate.facts(cal, args.source, args.within))
    by_size: Dict[int, List[float]] = {}
    for size, seconds in samples:
        by_size.setdefault(size, []).append(seconds * 1e6)
    print("# bytes  measured median [us]  fitted [us]")
    for size, fitted in calibrate.table(cal, sorted(by_size)):
        print(f"# {size:>8} {statistics.median(by_size[size]):>12.4g} {fitted:>12.4g}")
    return 0
