"""Import results made without commstack into a campaign as records.

  commstack import FILE --out results/<machine>/<campaign>        # published Betzy cartex tables
  commstack import DIR|FILE --benchmark imb|osu|cartex|gasnet --out results/<machine>/<campaign>

Published tables: the records look like sweep records (status ok, parameters, parsed values) and
say where each number is printed ("imported": true, source); `commstack report` prints the
published tables again from them. Importing the same file twice writes nothing.

Raw outputs (--benchmark): every regular file of DIR (recursively, sorted) or FILE is read with
that family's parser and becomes one record marked imported, with its path as given and its
sha256; failed or cut-off outputs become failed records with the reason; files that are not
outputs of the family are listed and skipped. Parameters come from the output itself. Importing
again adds nothing; nothing is overwritten.
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(p: argparse.ArgumentParser) -> None:
    from commstack.benchmarks.registry import import_formats

    p.add_argument("file", type=Path,
                   help="published result file (Markdown with tables); with --benchmark: a "
                        "benchmark output file, or a directory of them")
    p.add_argument("--out", type=Path, required=True,
                   help="campaign directory, results/<machine>/<campaign>")
    p.add_argument("--benchmark", choices=import_formats(), default=None,
                   help="import raw outputs of this benchmark family")
    p.add_argument("--origin", default=None,
                   help="where the file comes from (repository, path, licence), kept as provenance"
                        " (published tables)")


def execute(args: argparse.Namespace) -> int:
    if args.benchmark is not None:
        from commstack.errors import CampaignError
        from commstack.importers.raw import import_outputs

        if args.origin is not None:
            raise CampaignError("--origin is for published tables; raw outputs keep their path "
                                "and sha256")
        print(import_outputs(args.file, args.benchmark, args.out).summary())
        _leave_index(args.out)
        return 0
    from commstack.errors import CampaignError
    from commstack.importers import import_file
    from commstack.importers.raw import KIND
    from commstack.store.files import read_json

    info = args.out / "campaign.json"
    if info.is_file() and read_json(info).get("imported") == KIND:
        raise CampaignError(f"{args.out} is a campaign of imported raw outputs, not of published "
                            "tables; import into a new campaign directory")
    result = import_file(args.file, args.out, args.origin)
    print(result.summary())
    for note in result.corrections:
        print(f"  corrected: {note}")
    _leave_index(args.out)
    return 0


def _leave_index(root: Path) -> None:
    """The campaign's Parquet index brought up to date (the records it lacks: those just
    imported), so its first reader does not build it; nothing without pyarrow."""
    from commstack.store import tidy_index

    try:
        tidy_index.ensure(root)
    except ImportError:
        pass
