"""Import published results (Betzy cartex tables) into a campaign as records.

The records look like sweep records (status ok, parameters, parsed values) and say where each
number is printed ("imported": true, source); `commstack report` prints the published tables
again from them. Importing the same file twice writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, help="published result file (Markdown with tables)")
    p.add_argument("--out", type=Path, required=True,
                   help="campaign directory, results/<machine>/<campaign>")
    p.add_argument("--origin", default=None,
                   help="where the file comes from (repository, path, licence), kept as provenance")


def execute(args: argparse.Namespace) -> int:
    from commstack.importers import import_file

    result = import_file(args.file, args.out, args.origin)
    print(result.summary())
    for note in result.corrections:
        print(f"  corrected: {note}")
    return 0
