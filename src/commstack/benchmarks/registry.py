"""The one place that knows each benchmark: its executable, how parameters become argv, its parser.

A matrix names a benchmark (``benchmark: imb-mpi1``); every other part of commstack asks this
registry how to launch it and how to read what it printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Tuple


@dataclass(frozen=True)
class Option:
    """A benchmark argument that a matrix parameter maps to.

    kind:
      ``value``  -> ``flag VALUE``
      ``flag``   -> ``flag`` when the value is true, nothing when false
      ``triple`` -> ``flag X Y Z`` (value given as "X Y Z", "XxYxZ" or a list of 3)
      ``names``  -> positional words (IMB benchmark list: "PingPong Allreduce" or a list)
      ``trailing`` -> a positional word after every option (GASNet tests: iters maxsz sections)
    """

    flag: str
    kind: str = "value"
    help: str = ""

    def render(self, value: Any) -> List[str]:
        if self.kind == "flag":
            return [self.flag] if _truthy(value) else []
        if self.kind in ("names", "trailing"):
            return _words(value)
        if self.kind == "triple":
            parts = _words(str(value).replace("x", " ")) if not isinstance(value, list) else [
                str(v) for v in value
            ]
            if len(parts) != 3 or not all(p.lstrip("-").isdigit() for p in parts):
                raise ValueError(f"expected three integers like '2 2 1', got {value!r}")
            return [self.flag, *parts]
        return [self.flag, _scalar(value)]


@dataclass(frozen=True)
class Benchmark:
    """How to run one benchmark family and which parser reads its output."""

    name: str
    executable: str
    parser: str  # "imb", "cartex", "gasnet" or "osu"
    options: Mapping[str, Option] = field(default_factory=dict)
    # Parser notes that mean the run did not measure what was asked (the run is a failure).
    fatal_notes: Tuple[str, ...] = ()

    def argv(self, params: Mapping[str, Any]) -> List[str]:
        """Benchmark argv (executable first) for the option parameters in ``params``."""
        exe = str(params.get("executable", self.executable))
        args: List[str] = []
        # Positional names first (IMB reads the benchmark list before options).
        for name, option in self.options.items():
            if option.kind == "names" and name in params:
                args += option.render(params[name])
        for name, option in self.options.items():
            if option.kind not in ("names", "trailing") and name in params:
                args += option.render(params[name])
        for name, option in self.options.items():
            if option.kind == "trailing" and name in params:
                args += option.render(params[name])
        return [exe, *args]


def _truthy(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "y")
    return bool(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def _words(value: Any) -> List[str]:
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value]
    return str(value).replace(",", " ").split()


_IMB_COMMON: Dict[str, Option] = {
    "benchmarks": Option("", "names", "IMB benchmark list, e.g. 'PingPong Allreduce'"),
    "msglog": Option("-msglog", help="message sizes 2^min..2^max, e.g. '0:16'"),
    "msgsize": Option("-msgsize", help="explicit comma-separated message sizes (IMB 2021.11)"),
    "npmin": Option("-npmin", help="smallest process count"),
    "mem": Option("-mem", help="GB of memory per process for message buffers"),
    "off_cache": Option("-off_cache", help="cache size in MB (-1: default) and line size"),
    "iter": Option("-iter", help="repetitions per message size"),
    "time": Option("-time", help="seconds per message size before IMB stops"),
    "iter_policy": Option("-iter_policy", help="dynamic|multiple_np|auto|off"),
    "map": Option("-map", help="PxQ rank mapping"),
    "multi": Option("-multi", help="0|1: run groups simultaneously"),
    "zero_size": Option("-zero_size", help="0 drops the 0-byte row"),
    "data_type": Option("-data_type"),
    "red_data_type": Option("-red_data_type"),
    "window_size": Option("-window_size"),
    "sync": Option("-sync"),
    "root_shift": Option("-root_shift"),
}

_CARTEX: Dict[str, Option] = {
    "domain": Option("--domain", "triple", "local domain per rank"),
    "global_domain": Option("--global-domain", "triple", "global grid"),
    "halo": Option("--halo", help="halo width"),
    "nfields": Option("--nfields", help="fields per exchange"),
    "nrep": Option("--nrep", help="timed exchanges"),
    "time": Option("--time", help="time budget in seconds"),
    "order": Option("--order", help="rank order XYZ|ZYX|..."),
    "node": Option("--node", "triple", "hwcart node grid"),
    "socket": Option("--socket", "triple", "hwcart socket grid"),
    "numa": Option("--numa", "triple", "hwcart NUMA grid"),
    "l3": Option("--l3", "triple", "hwcart L3 grid"),
    "core": Option("--core", "triple", "hwcart core grid"),
    "hwthread": Option("--hwthread", "triple", "hwcart hardware-thread grid"),
    "thread": Option("--thread", "triple", "threads per rank"),
    "mpicart": Option("--MPICart", "triple", "MPI_Cart_create decomposition instead of hwcart"),
    "check": Option("--check", "flag", "verify halos once before timing"),
    "mpi_datatypes": Option("--MPI-datatypes", "flag", "mpi_comm: use MPI datatypes"),
    "node_local": Option("--node-local", "flag", "ghex_comm: node-local transport"),
}

# GASNet-EX tests/testlarge.c and testsmall.c (installed by packages/gasnet-tests as
# <program>-<conduit>): `testlarge [options] iters maxsz sections`.
_GASNET_TESTS: Dict[str, Option] = {
    "mb_units": Option("-m", "flag", "bandwidth in MB/s (2^20 B/s) instead of KB/s"),
    "in_segment": Option("-in", "flag", "initiator-side memory in the GASNet segment"),
    "out_segment": Option("-out", "flag", "initiator-side memory outside the segment"),
    "puts_only": Option("-p", "flag", "puts only"),
    "gets_only": Option("-g", "flag", "gets only"),
    "skip_warmup": Option("-s", "flag", "no warm-up iterations"),
    "full_duplex": Option("-a", "flag", "all nodes send"),
    "cross_machine": Option("-c", "flag", "cross-machine pairing"),
    "minsz": Option("-minsz", help="smallest transfer size"),
    "max_step": Option("-max-step", help="largest step between transfer sizes"),
    "segsz": Option("-segsz", help="segment size in MB"),
    "iters": Option("", "trailing", "iterations per size (first positional argument)"),
    "maxsz": Option("", "trailing", "largest transfer size in bytes"),
    "sections": Option("", "trailing", "test sections: A (latency, testsmall), B (bandwidth)"),
}

# OSU Micro-Benchmarks 7.x (osu_latency, osu_bw, osu_allreduce, ...): one program per test, picked
# with the `executable` parameter. -f exists for the collectives only (osu_latency rejects it).
_OSU: Dict[str, Option] = {
    "message_size": Option("-m", help="[MIN:]MAX message sizes in bytes, e.g. '1:65536'"),
    "iterations": Option("-i", help="timed iterations per size"),
    "warmup": Option("-x", help="untimed warm-up iterations per size"),
    "full": Option("-f", "flag", "collectives: also min/max latency and iterations"),
    "window_size": Option("-W", help="osu_bw/osu_bibw/osu_mbw_mr: messages per window"),
    "num_pairs": Option("-p", help="osu_mbw_mr: communicating pairs"),
    "mem_limit": Option("-M", help="collectives: per-process memory limit in bytes"),
    "datatype": Option("-T", help="mpi_char|mpi_int|mpi_float (one per run; not 'all')"),
}

# IMB runs every default benchmark when it meets an unknown name, and exits 0.
_IMB_FATAL = ("Invalid benchmark name",)

BENCHMARKS: Dict[str, Benchmark] = {
    "imb-mpi1": Benchmark("imb-mpi1", "IMB-MPI1", "imb", _IMB_COMMON, _IMB_FATAL),
    "imb-rma": Benchmark("imb-rma", "IMB-RMA", "imb", _IMB_COMMON, _IMB_FATAL),
    "imb-nbc": Benchmark("imb-nbc", "IMB-NBC", "imb", _IMB_COMMON, _IMB_FATAL),
    "imb-p2p": Benchmark("imb-p2p", "IMB-P2P", "imb", _IMB_COMMON, _IMB_FATAL),
    "cartex": Benchmark(
        # cartex builds one executable per runtime: pick it with the `executable` parameter.
        "cartex", "benchmark_mpi_comm", "cartex", _CARTEX
    ),
    # A gasnet stack runs <executable>-<conduit>, e.g. testlarge-ibv.
    "gasnet-testlarge": Benchmark("gasnet-testlarge", "testlarge", "gasnet", _GASNET_TESTS),
    "gasnet-testsmall": Benchmark("gasnet-testsmall", "testsmall", "gasnet", _GASNET_TESTS),
    "osu": Benchmark("osu", "osu_latency", "osu", _OSU),
}


def get(name: str) -> Benchmark:
    try:
        return BENCHMARKS[name]
    except KeyError:
        raise KeyError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)}") from None


def parser_for(name: str) -> Callable[[str], Any]:
    """The parse function for a benchmark or parser name ('imb', 'cartex', 'gasnet', 'osu')."""
    kind = BENCHMARKS[name].parser if name in BENCHMARKS else name
    if kind == "imb":
        from commstack.parsers.imb import parse_imb

        return parse_imb
    if kind == "cartex":
        from commstack.parsers.cartex import parse_cartex

        return parse_cartex
    if kind == "gasnet":
        from commstack.parsers.gasnet import parse_gasnet

        return parse_gasnet
    if kind == "osu":
        from commstack.parsers.osu import parse_osu

        return parse_osu
    raise KeyError(f"unknown parser {name!r}; known: imb, cartex, gasnet, osu")
