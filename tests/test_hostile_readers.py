"""The readers of what is not a benchmark output, on damaged copies of the project's own files:
matrices and tuning plans (`commstack plan`, the plan loader), machine.yaml, record.json, the
published Betzy tables and raw outputs through `commstack import`, and the Parquet index.

Hypothesis, seeded (`derandomize`: the same examples each run), with tests/mutations.py's
damage (truncation, byte flips, repeated, shuffled and deleted lines, line ends, NUL bytes,
numbers replaced by extreme and non-finite values, a grown line). The property: a result or one
of commstack's own errors in one sentence naming the file (the command's exit 0 or 2), never
another exception (a traceback).
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import re
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from commstack import errors
from commstack.cli import main
from commstack.cli.user_errors import USER_ERRORS
from commstack.machine import load_machine_file
from commstack.store.record import Record
from commstack.tune.plan import load_plan
from tests.conftest import REPO
from tests.mutations import mutate

# No shrinking: a failing example is reported as found (shrinking YAML took minutes).
SEEDED = settings(max_examples=40, derandomize=True, deadline=None, database=None,
                  phases=(Phase.explicit, Phase.generate),
                  suppress_health_check=[HealthCheck.too_slow,
                                         HealthCheck.function_scoped_fixture])
MATRICES = sorted((REPO / "matrices").glob("*/*.yaml"))
PLANS = sorted((REPO / "plans").glob("*/*.yaml"))
MACHINES = sorted((REPO / "site-configs").glob("*/machine.yaml"))
RECORDS = sorted((REPO / "tests/fixtures/campaigns").glob("**/record.json"))
BETZY = REPO / "results/betzy/reference/imports/betzy_allcores_27nodes.json"
RAW = sorted((REPO / "tests/fixtures/imb/openmpi-4.1.4").glob("*.out"))


def _damaged(files, choice: int, seed: int) -> bytes:
    return mutate(files[choice % len(files)].read_bytes(), random.Random(seed))


def _damaged_yaml(kind: Path, files, choice: int, seed: int) -> Path:
    """A damaged copy as <kind>/local/damaged.yaml (the machine is the folder's name)."""
    path = kind / "local" / "damaged.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(_damaged(files, choice, seed))
    return path


def _cli(*argv: str):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _one_sentence(code: int, err: str, path: Path) -> None:
    assert code in (0, errors.USER_ERROR_EXIT), err[-2000:]
    if code == errors.USER_ERROR_EXIT:
        lines = [line for line in err.splitlines() if "error:" in line]
        # The file is named, unless what is wrong is this machine's (a damaged matrix naming a
        # stack whose executable is not installed here is refused for that, by stack).
        machine = re.search(r"error: stack '[^']*': .* not found", lines[0]) if lines else None
        assert len(lines) == 1 and (str(path) in lines[0] or machine), err[-2000:]
        assert len(lines[0]) < 2000
        assert "Traceback" not in err


def _loaded_or_refused(load, path: Path, refusals) -> None:
    try:
        load(path)
    except refusals as exc:
        assert str(path) in str(exc) and "\n" not in str(exc).strip(), str(exc)[:2000]


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_matrix_is_planned_or_refused_in_one_sentence(tmp_path_factory, choice, seed):
    path = _damaged_yaml(tmp_path_factory.mktemp("m") / "matrices", MATRICES, choice, seed)
    code, _, err = _cli("plan", str(path))
    _one_sentence(code, err, path)


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_tuning_plan_is_loaded_or_refused_in_one_sentence(tmp_path_factory, choice, seed):
    path = _damaged_yaml(tmp_path_factory.mktemp("p") / "plans", PLANS, choice, seed)
    _loaded_or_refused(load_plan, path, USER_ERRORS)


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_machine_file_is_loaded_or_refused_in_one_sentence(tmp_path_factory, choice, seed):
    path = tmp_path_factory.mktemp("site") / "machine.yaml"
    path.write_bytes(_damaged(MACHINES, choice, seed))
    _loaded_or_refused(load_machine_file, path, USER_ERRORS)


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_record_is_loaded_or_refused_in_one_sentence(tmp_path_factory, choice, seed):
    source = RECORDS[choice % len(RECORDS)]
    attempt = tmp_path_factory.mktemp("attempt")
    for sibling in source.parent.iterdir():  # its outputs: a record's rows point into stdout.txt
        shutil.copy(sibling, attempt / sibling.name)
    path = attempt / "record.json"
    path.write_bytes(mutate(source.read_bytes(), random.Random(seed)))
    _loaded_or_refused(Record.load, path, USER_ERRORS)


@SEEDED
@given(seed=st.integers(0, 2 ** 32))
def test_a_damaged_published_table_is_imported_or_refused_in_one_sentence(tmp_path_factory, seed):
    tmp = tmp_path_factory.mktemp("betzy")
    path = tmp / "betzy_allcores_27nodes.md"
    text = json.loads(BETZY.read_text())["text"].encode()
    path.write_bytes(mutate(text, random.Random(seed)))
    code, _, err = _cli("import", str(path), "--out", str(tmp / "results" / "betzy" / "imported"))
    _one_sentence(code, err, path)


@SEEDED
@given(choice=st.integers(0, 10 ** 6), seed=st.integers(0, 2 ** 32))
def test_a_damaged_raw_output_is_imported_or_refused_in_one_sentence(tmp_path_factory, choice, seed):
    tmp = tmp_path_factory.mktemp("raw")
    path = tmp / "run.out"
    path.write_bytes(_damaged(RAW, choice, seed))
    code, _, err = _cli("import", str(path), "--benchmark", "imb",
                        "--out", str(tmp / "results" / "elsewhere" / "imported"))
    # A damaged output is imported as a failed record with its reason, not refused.
    assert code == 0, err[-2000:]
    assert "Traceback" not in err


def test_the_readers_have_real_files_to_damage():
    assert len(MATRICES) >= 10 and len(PLANS) >= 3 and len(MACHINES) >= 4
    assert len(RECORDS) >= 3 and len(RAW) >= 10 and BETZY.is_file()


@pytest.fixture(scope="module")
def indexed_campaign(tmp_path_factory) -> Path:
    pytest.importorskip("pyarrow", reason="skipped: pyarrow not installed (pip install 'commstack[test]')")
    from commstack.store import tidy_index

    root = tmp_path_factory.mktemp("indexed") / "schema1-local"
    shutil.copytree(REPO / "tests/fixtures/campaigns/local/schema1-local", root)
    tidy_index.ensure(root)
    return root


@SEEDED
@given(seed=st.integers(0, 2 ** 32))
def test_a_damaged_index_part_is_rebuilt_from_the_records(indexed_campaign, tmp_path_factory, seed):
    from commstack.store import tidy_index

    root = tmp_path_factory.mktemp("copy") / "schema1-local"
    shutil.copytree(indexed_campaign, root)
    before = sorted(json.dumps(r, sort_keys=True) for r in tidy_index.read_rows([root]))
    [part] = (root / "index").glob("*.parquet")
    part.write_bytes(mutate(part.read_bytes(), random.Random(seed)))
    after = sorted(json.dumps(r, sort_keys=True) for r in tidy_index.read_rows([root]))
    # Damage pyarrow cannot see (a flipped byte in a value) may survive: the rows still have the
    # index's form; damage it sees makes a rebuild that gives back the records' rows.
    assert len(after) == len(before)
