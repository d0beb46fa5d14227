"""Parsers for benchmark outputs: IMB (Intel MPI Benchmarks), GHEX-BENCH cartex, OSU Micro-Benchmarks."""

from .cartex import CartexOutput, parse_cartex
from .errors import ParseError
from .imb import ImbOutput, parse_imb
from .osu import OsuOutput, parse_osu

__all__ = ["CartexOutput", "ImbOutput", "OsuOutput", "ParseError", "parse_cartex", "parse_imb", "parse_osu"]
