"""Parsers for benchmark outputs: IMB (Intel MPI Benchmarks) and GHEX-BENCH cartex."""

from .cartex import CartexOutput, parse_cartex
from .errors import ParseError
from .imb import ImbOutput, parse_imb

__all__ = ["CartexOutput", "ImbOutput", "ParseError", "parse_cartex", "parse_imb"]
