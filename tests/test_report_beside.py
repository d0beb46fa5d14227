"""summary.csv is written by a forked child while the report goes on
(:mod:`commstack.report.beside`): the file is whole when ``finish`` returns, and a child that
cannot write names the file instead of passing silently."""

from __future__ import annotations

import pytest

from commstack.errors import CampaignError
from commstack.report.beside import Beside


def test_a_child_writes_the_whole_file_before_finish_returns(tmp_path):
    beside = Beside()
    text = "".join(f"{i},{i * 0.5}\n" for i in range(200_000))
    beside.write(tmp_path / "summary.csv", lambda handle: handle.write(text.encode()))
    beside.finish()
    assert (tmp_path / "summary.csv").read_text() == text


def test_a_child_that_cannot_write_names_the_file(tmp_path, capfd):
    beside = Beside()
    beside.write(tmp_path / "missing" / "summary.csv", lambda handle: handle.write(b"a,b\n"))
    with pytest.raises(CampaignError, match="summary.csv could not be written"):
        beside.finish()
    if beside.fork:  # the child's one sentence names the path
        assert "missing/summary.csv: not written" in capfd.readouterr().err


def test_an_error_while_formatting_is_named_too(tmp_path):
    def broken(handle) -> None:
        handle.write(b"point_id,")
        raise ValueError("no such column")

    beside = Beside()
    if not beside.fork:
        pytest.skip("no fork here: the error is raised in place")
    beside.write(tmp_path / "summary.csv", broken)
    with pytest.raises(CampaignError):
        beside.finish()
    assert not (tmp_path / "summary.csv").exists()  # nor half a file
    assert not list(tmp_path.iterdir())
