"""Tests for commstack.benchmarks.imb's parser on real IMB outputs recorded on this machine.

Fixtures live in tests/fixtures/imb/<mpi>-<version>/<stem>.out (stdout) and are listed in
tests/fixtures/MANIFEST.csv. Stems containing "fail-" are runs that must not parse.
"""

import csv
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest

from commstack.benchmarks.base import Output, ParseError
from commstack.benchmarks.imb import parse_imb

FIXTURES = Path(__file__).parent / "fixtures"
OMPI = "imb/openmpi-4.1.4/v2021.11-"
MPICH = "imb/mpich-4.0.2/v2021.11-"
IMPI = "imb/intelmpi-2021.18/prebuilt-"


def read(name: str) -> str:
    """Return the stdout fixture ``name`` ('.out' is added)."""
    return (FIXTURES / f"{name}.out").read_text()


def parse(name: str) -> Output:
    return parse_imb(read(name))


def tables(output: Output) -> Dict[Tuple, List[dict]]:
    """Group rows by (benchmark, np, mode, groups) in order of appearance."""
    grouped: Dict[Tuple, List[dict]] = {}
    for row in output.rows:
        key = (row["benchmark"], row["np"], row["mode"], row.get("groups"))
        grouped.setdefault(key, []).append(row)
    return grouped


def row_at(output: Output, benchmark: str, np: int, size: Optional[int], **match) -> dict:
    """The single row of ``benchmark`` with ``np`` processes and ``size`` bytes."""
    found = [r for r in output.rows
             if r["benchmark"] == benchmark and r["np"] == np and r["bytes"] == size
             and all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, found
    return found[0]


def sizes(low: int, high: int, zero: bool = True) -> List[int]:
    """The #bytes list of '-msglog low:high' (2^low..2^high, with a leading 0 row)."""
    return ([0] if zero else []) + [2 ** k for k in range(low, high + 1)]


def manifest_rows(prefix: str) -> List[dict]:
    with open(FIXTURES / "MANIFEST.csv", newline="") as handle:
        return [row for row in csv.DictReader(handle) if row["file"].startswith(prefix)]


# ----------------------------------------------------------------------------------------------
# Every fixture: success parses, failure raises
# ----------------------------------------------------------------------------------------------

IMB_FIXTURES = manifest_rows("imb/")


def test_manifest_lists_existing_files():
    assert len(IMB_FIXTURES) >= 40
    for row in IMB_FIXTURES:
        assert (FIXTURES / row["file"]).exists(), row["file"]
        assert (FIXTURES / row["file"].replace(".out", ".err")).exists(), row["file"]


@pytest.mark.parametrize("entry", IMB_FIXTURES, ids=[r["file"] for r in IMB_FIXTURES])
def test_every_fixture_parses_or_fails_as_expected(entry):
    text = (FIXTURES / entry["file"]).read_text()
    if "fail-" in entry["file"]:
        with pytest.raises(ParseError):
            parse_imb(text)
        return
    output = parse_imb(text)
    assert output.rows, "a successful run has rows"
    assert output.meta["version"] == "2021.11"
    for row in output.rows:
        assert row["suite"] == output.meta["suite"]
        assert row["status"] in ("ok", "out-of-mem", "time-out", "int-overflow")
        assert isinstance(row["np"], int)


# ----------------------------------------------------------------------------------------------
# MPI-1 layouts
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [OMPI + "mpi1-pingpong-np2", MPICH + "mpi1-pingpong-np2", IMPI + "mpi1-pingpong-np2"])
def test_pingpong_header_and_rows(name):
    output = parse(name)
    assert (output.meta["suite"], output.meta["version"]) == ("MPI-1", "2021.11")
    assert output.meta["calling_sequence"] == "IMB-MPI1 PingPong -msglog 0:10 -iter 100"
    assert [r["bytes"] for r in output.rows] == sizes(0, 10)
    first = output.rows[0]
    assert set(first) == {"suite", "benchmark", "multi", "np", "mode", "bytes", "repetitions",
                          "t_us", "mbytes_per_s", "status"}
    assert (first["benchmark"], first["np"], first["multi"], first["mode"]) == ("PingPong", 2, None, None)


def test_pingpong_values_from_file():
    output = parse(OMPI + "mpi1-pingpong-np2")
    last = output.rows[-1]
    assert (last["bytes"], last["repetitions"], last["t_us"], last["mbytes_per_s"]) == (1024, 100, 0.92, 1107.78)


def test_pingping_layout():
    output = parse(OMPI + "mpi1-pingping-np2")
    assert {r["benchmark"] for r in output.rows} == {"PingPing"}
    assert len(output.rows) == 12 and "t_us" in output.rows[0]


def test_sendrecv_exchange_np4_has_tables_for_2_and_4():
    output = parse(OMPI + "mpi1-sendrecv-exchange-np4")
    assert list(tables(output)) == [("Sendrecv", 2, None, None), ("Sendrecv", 4, None, None),
                                    ("Exchange", 2, None, None), ("Exchange", 4, None, None)]
    for rows in tables(output).values():
        assert [r["bytes"] for r in rows] == sizes(0, 10)
    row = row_at(output, "Sendrecv", 2, 1)
    assert (row["t_min_us"], row["t_max_us"], row["t_avg_us"], row["mbytes_per_s"]) == (6.22, 6.25, 6.23, 0.32)
    assert row_at(output, "Exchange", 4, 0)["t_avg_us"] == 6.63


def test_alltoall_allgather_np4():
    output = parse(OMPI + "mpi1-alltoall-allgather-np4")
    assert [key[:2] for key in tables(output)] == [("Alltoall", 2), ("Alltoall", 4), ("Allgather", 2), ("Allgather", 4)]
    for rows in tables(output).values():
        assert [r["bytes"] for r in rows] == sizes(0, 10)
        assert "mbytes_per_s" not in rows[0] and "t_avg_us" in rows[0]


def test_allreduce_float_sizes_skip_1_and_2_bytes():
    output = parse(OMPI + "mpi1-allreduce-np4")
    assert [key[1] for key in tables(output)] == [2, 4]
    for rows in tables(output).values():
        assert [r["bytes"] for r in rows] == [0] + [2 ** k for k in range(2, 11)]
    row = row_at(output, "Allreduce", 4, 4)
    assert (row["t_min_us"], row["t_max_us"], row["t_avg_us"]) == (9.35, 19.13, 12.33)


def test_barrier_has_no_bytes():
    output = parse(OMPI + "mpi1-barrier-np4")
    assert [(r["np"], r["bytes"], r["t_avg_us"]) for r in output.rows] == [(2, None, 3.76), (4, None, 7.23)]


def test_uniband_biband_columns():
    output = parse(OMPI + "mpi1-uniband-biband-np2")
    assert [key[0] for key in tables(output)] == ["Uniband", "Biband"]
    for rows in tables(output).values():
        assert [r["bytes"] for r in rows] == sizes(0, 8)
        assert "t_us" not in rows[0] and "t_avg_us" not in rows[0]
    assert row_at(output, "Uniband", 2, 0)["msg_per_s"] == 11225727
    assert row_at(output, "Biband", 2, 1)["mbytes_per_s"] == 2.73


def test_npmin_1_gives_process_counts_1_2_4_6():
    output = parse(OMPI + "mpi1-allreduce-barrier-np6-npmin1")
    for benchmark in ("Allreduce", "Barrier"):
        assert [key[1] for key in tables(output) if key[0] == benchmark] == [1, 2, 4, 6]
    assert row_at(output, "Allreduce", 2, 4)["t_avg_us"] == 6.70


def test_multi_0_groups_and_summary_rows():
    output = parse(OMPI + "mpi1-multi0-pingpong-allreduce-np4")
    assert list(tables(output)) == [("PingPong", 2, None, 2), ("Allreduce", 2, None, 2), ("Allreduce", 4, None, 1)]
    assert all(r["multi"] == 0 for r in output.rows)
    assert all("group" not in r for r in output.rows)
    pingpong = tables(output)[("PingPong", 2, None, 2)]
    assert [r["bytes"] for r in pingpong] == sizes(0, 6)
    # -multi 0 switches 2-rank benchmarks to the t_min/t_max/t_avg + Mbytes/sec columns
    assert (pingpong[0]["t_min_us"], pingpong[0]["t_avg_us"], pingpong[-1]["mbytes_per_s"]) == (5.32, 5.35, 12.93)


def test_multi_1_one_row_per_group_despite_blank_lines():
    output = parse(OMPI + "mpi1-multi1-pingpong-allreduce-np4")
    assert all(r["multi"] == 1 for r in output.rows)
    pingpong = tables(output)[("PingPong", 2, None, 2)]
    assert len(pingpong) == 2 * len(sizes(0, 6))
    assert [(r["group"], r["bytes"]) for r in pingpong[:4]] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert pingpong[1]["t_us"] == 3.98  # -multi 1 keeps the t[usec] column for PingPong
    whole = tables(output)[("Allreduce", 4, None, 1)]
    assert [r["group"] for r in whole] == [0] * 6  # sizes 0, 4, ..., 64 (MPI_FLOAT)
    assert whole[-1]["t_avg_us"] == 10.28


def test_map_2x2():
    output = parse(OMPI + "mpi1-sendrecv-np4-map2x2")
    assert [key[1] for key in tables(output)] == [2, 4]
    assert all(len(rows) == 8 for rows in tables(output).values())
    assert output.meta["calling_sequence"] == "IMB-MPI1 -map 2x2 Sendrecv -msglog 0:6 -iter 50"


def test_one_process_pingpong_invalid_is_a_note():
    output = parse(OMPI + "mpi1-pingpong-allreduce-np1")
    assert "Benchmark PingPong invalid for 1 processes" in output.notes
    assert {(r["benchmark"], r["np"]) for r in output.rows} == {("Allreduce", 1)}


def test_invalid_benchmark_name_is_a_note():
    output = parse(OMPI + "mpi1-pingpong-invalid-name-np2")
    assert "Invalid benchmark name nosuchbench" in output.notes
    assert {r["benchmark"] for r in output.rows} == {"PingPong"}


def test_default_list_all_benchmarks():
    output = parse(OMPI + "mpi1-default-np2-msglog0-4")
    names = list(dict.fromkeys(r["benchmark"] for r in output.rows))
    assert names == ["PingPong", "PingPing", "Sendrecv", "Exchange", "Allreduce", "Reduce", "Reduce_local",
                     "Reduce_scatter", "Reduce_scatter_block", "Allgather", "Allgatherv", "Gather", "Gatherv",
                     "Scatter", "Scatterv", "Alltoall", "Alltoallv", "Bcast", "Barrier"]


def test_time_out_rows():
    output = parse(OMPI + "mpi1-alltoall-np4-time-limit")
    special = [r for r in output.rows if r["status"] != "ok"]
    assert [(r["benchmark"], r["bytes"], r["status"]) for r in special] == [("Alltoall", 1, "time-out"),
                                                                             ("Allgather", 1, "time-out")]
    assert special[0]["message"].startswith("time-out.; Time limit")
    assert "t_avg_us" not in special[0]


def test_out_of_mem_rows():
    output = parse(OMPI + "mpi1-alltoall-np2-mem-limit")
    alltoall = tables(output)[("Alltoall", 2, None, None)]
    assert [r["bytes"] for r in alltoall] == [0, 65536, 131072, 262144, 524288]
    assert alltoall[-1]["status"] == "out-of-mem"
    assert alltoall[-1]["message"].startswith('out-of-mem.; needed X=   0.003 GB')
    assert row_at(output, "Sendrecv", 2, 1048576)["status"] == "out-of-mem"


# ----------------------------------------------------------------------------------------------
# Launcher prefixes and chatter
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, count", [(OMPI + "mpi1-pingpong-np2-tag-output", 8),
                                         (OMPI + "mpi1-pingpong-np2-tag-timestamp", 6),
                                         (MPICH + "mpi1-pingpong-np2-hydra-l", 8)])
def test_prefixed_lines(name, count):
    first = read(name).splitlines()[0]
    assert first != "#" + "-" * 64 and first.endswith("#" + "-" * 64)  # the prefix is really there
    output = parse(name)
    assert output.meta["calling_sequence"].startswith("IMB-MPI1 PingPong -msglog 0:")
    assert [r["bytes"] for r in output.rows] == sizes(0, count - 2)
    assert not any("stdout" in note or note.startswith("[") for note in output.notes)


def test_tag_output_values():
    output = parse(OMPI + "mpi1-pingpong-np2-tag-output")
    assert row_at(output, "PingPong", 2, 1)["mbytes_per_s"] == 6.07


def test_intel_hydra_l_split_separators():
    # Intel's hydra labels every write(): "[0] #[0] -[0] -..." and "# Benchmarking Sendrecv [0] "
    assert "[0] #[0] -[0] -" in read(IMPI + "mpi1-sendrecv-np2-hydra-l")
    output = parse(IMPI + "mpi1-sendrecv-np2-hydra-l")
    assert list(tables(output)) == [("Sendrecv", 2, None, None), ("Barrier", 2, None, None)]
    assert [r["bytes"] for r in tables(output)[("Sendrecv", 2, None, None)]] == sizes(0, 8)
    assert row_at(output, "Sendrecv", 2, 1)["t_avg_us"] == 3.10
    assert output.notes == []


def test_intel_debug_lines_before_banner():
    text = read(IMPI + "mpi1-pingping-np2-debug5")
    assert text.startswith("[0] MPI startup(): Intel(R) MPI Library")
    output = parse_imb(text)
    assert "ignored 15 Intel MPI startup lines" in output.notes
    assert [key[0] for key in tables(output)] == ["PingPing", "Allreduce"]


@pytest.mark.parametrize("name, rows", [(OMPI + "mpi1-pingpong-np2-ucx-info", 16),
                                        (OMPI + "mpi1-pingpong-np2-ucx-protoinfo", 18)])
def test_ucx_log_lines_are_ignored(name, rows):
    output = parse(name)
    assert len(output.rows) == rows
    assert any(note.startswith("ignored") and "UCX log lines" in note for note in output.notes)


def test_ucx_protocol_tables_inside_a_table():
    text = read(OMPI + "mpi1-pingpong-np2-ucx-protoinfo")
    body = text.split("#bytes #repetitions")[1]
    assert "ep_cfg[1]" in body  # UCX lines really are interleaved with the rows
    output = parse_imb(text)
    assert [r["bytes"] for r in output.rows] == sizes(0, 16)


def test_ucx_warning_becomes_a_note():
    text = read(OMPI + "mpi1-pingpong-np2")
    warning = "[1795329961.243038] [vm:950  :0]  ucp_context.c:1849 UCX  WARN  transport 'bogus' is not available"
    lines = text.splitlines()
    lines.insert(35, warning)
    output = parse_imb("\n".join(lines) + "\n")
    assert len(output.rows) == 12
    assert any("WARN  transport 'bogus'" in note for note in output.notes)


# ----------------------------------------------------------------------------------------------
# RMA, NBC, P2P, MT
# ----------------------------------------------------------------------------------------------


def test_rma_both_modes():
    output = parse(OMPI + "rma-unidir-np2")
    assert list(tables(output)) == [("Unidir_put", 2, "non-aggregate", None), ("Unidir_put", 2, "aggregate", None),
                                    ("Unidir_get", 2, "non-aggregate", None), ("Unidir_get", 2, "aggregate", None)]
    assert all(len(rows) == len(sizes(0, 8)) for rows in tables(output).values())
    assert row_at(output, "Unidir_put", 2, 1, mode="non-aggregate")["t_us"] == 2.15
    assert row_at(output, "Unidir_put", 2, 1, mode="aggregate")["t_us"] == 2.11


def test_rma_single_mode():
    output = parse(OMPI + "rma-oneputall-allputall-np4")
    assert list(tables(output)) == [("One_put_all", 2, None, None), ("One_put_all", 4, None, None),
                                    ("All_put_all", 2, None, None), ("All_put_all", 4, None, None)]
    assert "t_us" in tables(output)[("One_put_all", 4, None, None)][0]
    assert "t_avg_us" in tables(output)[("All_put_all", 4, None, None)][0]


def test_rma_default_list_special_layouts():
    output = parse(OMPI + "rma-default-np2-msglog0-4")
    passive = tables(output)[("Truly_passive_put", 2, None, None)]
    assert (passive[0]["t_pure_us"], passive[0]["t_ovrl_us"]) == (0.27, 0.36)
    assert [r["bytes"] for r in tables(output)[("Compare_and_swap", 2, "aggregate", None)]] == [4]


def test_nbc_overlap_pure_and_barrier():
    output = parse(OMPI + "nbc-ialltoall-ibarrier-np4")
    assert output.meta["suite"] == "MPI-NBC"
    assert [key[:2] for key in tables(output)] == [("Ialltoall", 2), ("Ialltoall", 4), ("Ialltoall_pure", 2),
                                                   ("Ialltoall_pure", 4), ("Ibarrier", 2), ("Ibarrier", 4),
                                                   ("Ibarrier_pure", 2), ("Ibarrier_pure", 4)]
    row = row_at(output, "Ialltoall", 2, 0)
    assert (row["t_ovrl_us"], row["t_pure_us"], row["t_cpu_us"], row["overlap_pct"]) == (15.94, 9.54, 5.74, 0.0)
    assert "t_avg_us" in row_at(output, "Ialltoall_pure", 4, 64)
    ibarrier = row_at(output, "Ibarrier", 4, None)
    assert "t_ovrl_us" in ibarrier and ibarrier["bytes"] is None


@pytest.mark.parametrize("name", [OMPI + "p2p-pingpong-np2", IMPI + "p2p-pingpong-np2"])
def test_p2p_layout(name):
    output = parse(name)
    assert (output.meta["suite"], output.meta["calling_sequence"]) == (
        "IMB-P2P", "IMB-P2P PingPong -msglog 0:8 -iter 2000")
    assert [r["bytes"] for r in output.rows] == sizes(0, 8, zero=False)  # P2P has no 0-byte row here
    assert {"t_us", "mbytes_per_s", "msg_per_s"} <= set(output.rows[0])


def test_p2p_values():
    row = parse(OMPI + "p2p-pingpong-np2").rows[0]
    assert (row["repetitions"], row["t_us"], row["mbytes_per_s"], row["msg_per_s"]) == (2000, 0.15, 6.72, 6722644)


def test_mt_layout_without_calling_sequence_or_finalize():
    output = parse(IMPI + "mt-pingpongmt-barriermt-np2")
    assert (output.meta["suite"], output.meta["version"], output.meta["calling_sequence"]) == ("MT", "2021.11", "")
    assert list(tables(output)) == [("PingPongMT", 2, None, None), ("BarrierMT", 2, None, None),
                                    ("AllReduceMT", 2, None, None)]
    assert all(r["threads"] == 1 for r in output.rows)
    assert [r["bytes"] for r in output.rows if r["benchmark"] == "PingPongMT"] == [4, 64, 4096]
    barrier = row_at(output, "BarrierMT", 2, None)
    assert barrier["t_avg_us"] == 0.42


def test_mt_threads_2():
    output = parse(IMPI + "mt-unibandmt-np2-multiple")
    assert [(r["threads"], r["bytes"]) for r in output.rows] == [(2, 8), (2, 8192)]
    assert output.rows[0]["msg_per_s"] == 231304


def test_rma_and_nbc_with_intel_and_mpich():
    intel = parse(IMPI + "rma-unidir-put-np2")
    assert [key[:3] for key in tables(intel)] == [("Unidir_put", 2, "non-aggregate"), ("Unidir_put", 2, "aggregate"),
                                                  ("One_put_all", 2, None)]
    mpich = parse(MPICH + "rma-unidir-bidir-np2")
    assert [key[2] for key in tables(mpich)] == ["non-aggregate", "aggregate"] * 2


# ----------------------------------------------------------------------------------------------
# Failures
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, message", [
    (OMPI + "fail-timeout-int-np4", "MPI_Finalize' line missing: output cut off in table Alltoall (#processes=4)"),
    (OMPI + "fail-rank-killed-np4", "output cut off in table Alltoall"),
    (MPICH + "fail-timeout-int-np2", "output cut off in table Allreduce (#processes=2)"),
    (MPICH + "fail-rank-killed-np2", "BAD TERMINATION"),
    (IMPI + "fail-rank-killed-np2", "BAD TERMINATION"),
    (IMPI + "fail-timeout-int-np2", "BAD TERMINATION"),
    (OMPI + "fail-msglog-8-2-np2", "empty output"),
    (OMPI + "fail-msglog-abc-np2", "ERROR: Parse error on option: -msglog"),
    (IMPI + "fail-mt-timeout-kill-np2", "PingPongMT (#processes=2) starting at line 7 is cut off"),
])
def test_failure_messages(name, message):
    with pytest.raises(ParseError, match=None) as error:
        parse(name)
    assert message in str(error.value)


def test_failure_has_line_number():
    with pytest.raises(ParseError) as error:
        parse(MPICH + "fail-rank-killed-np2")
    line = error.value.line
    assert "BAD TERMINATION" in read(MPICH + "fail-rank-killed-np2").splitlines()[line - 1]


def test_header_cut_before_column_line():
    text = read(OMPI + "mpi1-pingpong-np2")
    cut = text[: text.index("       #bytes")]
    with pytest.raises(ParseError, match="cut off before its column header"):
        parse_imb(cut)


def test_row_with_missing_value():
    text = read(OMPI + "mpi1-pingpong-np2").replace("         1024          100         0.92      1107.78",
                                                     "         1024          100         0.92")
    with pytest.raises(ParseError, match="row has 3 values but the header .* has 4 columns"):
        parse_imb(text)


def test_no_banner():
    with pytest.raises(ParseError, match="no IMB banner"):
        parse_imb("hello\nworld\n")


def test_version_2019_banner():
    text = read(OMPI + "mpi1-pingpong-np2").replace("Intel(R) MPI Benchmarks 2021.11, MPI-1 part",
                                                     "Intel(R) MPI Benchmarks 2019 Update 6, MPI-1 part    ")
    assert parse_imb(text).meta["version"] == "2019 Update 6"


# ----------------------------------------------------------------------------------------------
# Layouts not in the corpus, derived from a real fixture (shapes documented in research/imb.md)
# ----------------------------------------------------------------------------------------------


def test_io_banner_without_newline():
    # IMB-IO 2021.x prints "... MPI-IO partn#-----" (missing newline in the title)
    text = read(OMPI + "mpi1-pingpong-np2").replace("MPI-1 part\n#---", "MPI-IO partn#---")
    output = parse_imb(text)
    assert output.meta["suite"] == "MPI-IO" and len(output.rows) == 12


def test_defects_column_of_check_build():
    lines = []
    for line in read(OMPI + "mpi1-pingpong-np2").splitlines():
        if line.startswith("       #bytes"):
            line += "      defects"
        elif line.startswith("   ") and line.split()[0].isdigit():
            line += "         0.00"
        lines.append(line)
    output = parse_imb("\n".join(lines) + "\n")
    assert all(row["defects"] == 0.0 for row in output.rows) and len(output.rows) == 12


def test_special_row_in_multi_1_table_and_int_overflow():
    text = read(OMPI + "mpi1-multi1-pingpong-allreduce-np4").replace(
        "            1           64           50         4.50        14.23",
        "            1           64 int-overflow; The production rank*size caused int overflow; Stopping benchmark")
    output = parse_imb(text)
    row = row_at(output, "PingPong", 2, 64, group=1)
    assert (row["status"], row["message"]) == ("int-overflow", "int-overflow; The production rank*size caused "
                                                               "int overflow; Stopping benchmark")


def _is_row_or_finalize(line: str) -> bool:
    return "All processes entering MPI_Finalize" in line or line.strip()[:1].isdigit()


def test_every_truncation_of_every_success_fixture_raises():
    """Cutting a success fixture before its Finalize line must raise.

    IMB-MT has no Finalize line: a cut between two tables cannot be seen, so for MT only cuts
    inside a table (not right after a blank line) are checked.
    """
    for entry in IMB_FIXTURES:
        if "fail-" in entry["file"]:
            continue
        lines = (FIXTURES / entry["file"]).read_text().splitlines(keepends=True)
        is_mt = "-mt-" in entry["file"]
        last_needed = max(i for i, line in enumerate(lines) if _is_row_or_finalize(line))
        for end in range(last_needed + 1):
            if is_mt and end > 0 and not lines[end - 1].strip():
                continue
            with pytest.raises(ParseError):
                parse_imb("".join(lines[:end]))


# ----------------------------------------------------------------------------------------------
# Issue 18: IMB-P2P and IMB-MT whole lists, np > 2 ("additional process waiting in MPI_Barrier"),
# -multi 0/1 with Msg/sec, IMB-EXT and IMB-IO (IMB 2021.7 with Open MPI, own manifest)
# ----------------------------------------------------------------------------------------------


def test_p2p_whole_default_list_in_its_own_layout():
    output = parse(IMPI + "p2p-default-np2-msglog0-4")
    assert list(dict.fromkeys(r["benchmark"] for r in output.rows)) == [
        "PingPong", "PingPing", "Unirandom", "Birandom", "Corandom", "SendRecv_Replace"]
    assert all(r["np"] == 2 and {"t_us", "mbytes_per_s", "msg_per_s", "repetitions"} <= set(r)
               for r in output.rows)
    row = row_at(output, "Unirandom", 2, 16)
    assert (row["repetitions"], row["t_us"], row["mbytes_per_s"], row["msg_per_s"]) == (100, 0.75, 42.63, 2664156)
    assert {"Benchmark Stencil2D is invalid for 2 processes",
            "Benchmark Stencil3D is invalid for 2 processes"} <= set(output.notes)


def test_p2p_stencil_grid_is_kept():
    output = parse(IMPI + "p2p-stencil-unirandom-np4")
    stencil = [r for r in output.rows if r["benchmark"] == "Stencil2D"]
    assert [r["bytes"] for r in stencil] == sizes(0, 4, zero=False)
    assert {(r["np"], r["grid"]) for r in stencil} == {(4, "2x2")}
    assert row_at(output, "Stencil2D", 4, 4)["msg_per_s"] == 1823136
    assert "grid" not in row_at(output, "Unirandom", 4, 4)
    assert "Benchmark Stencil3D is invalid for 4 processes" in output.notes


def test_mt_whole_default_list_with_threads_and_msg_per_s():
    output = parse(IMPI + "mt-default-np2-multiple")
    assert [key[0] for key in tables(output)] == [
        "PingPongMT", "PingPingMT", "SendRecvMT", "ExchangeMT", "UniBandMT", "BiBandMT", "BarrierMT",
        "BcastMT", "ReduceMT", "AllReduceMT"]
    assert all(r["threads"] == 2 and r["np"] == 2 for r in output.rows)
    uniband = row_at(output, "UniBandMT", 2, 8192)
    assert (uniband["t_avg_us"], uniband["mbytes_per_s"], uniband["msg_per_s"]) == (0.48, 16504.07, 4173084)
    assert row_at(output, "BarrierMT", 2, None)["t_avg_us"] == 5.98
    assert "t_min_us" in row_at(output, "PingPongMT", 2, 8)


def test_mt_on_3_ranks_uses_2_for_pingpong_and_3_for_bcast():
    output = parse(IMPI + "mt-pingpongmt-bcastmt-np3-multiple")
    assert [key[:2] for key in tables(output)] == [("PingPongMT", 2), ("BcastMT", 3)]
    assert row_at(output, "BcastMT", 3, 8)["t_max_us"] == 15.34


@pytest.mark.parametrize("name, benchmarks", [
    (IMPI + "mpi1-pingpong-uniband-np3", ["PingPong", "PingPing", "Uniband"]),
    (IMPI + "rma-unidir-bidir-np3", ["Unidir_put", "Bidir_put", "Unidir_get"]),
])
def test_waiting_process_block_leaves_the_table_on_2_processes(name, benchmarks):
    text = read(name)
    assert "( 1 additional process waiting in MPI_Barrier)" in text
    output = parse_imb(text)
    assert list(dict.fromkeys(r["benchmark"] for r in output.rows)) == benchmarks
    assert {r["np"] for r in output.rows} == {2} and output.notes == []


def test_uniband_msg_per_s_and_rma_modes_on_3_ranks():
    uniband = row_at(parse(IMPI + "mpi1-pingpong-uniband-np3"), "Uniband", 2, 8)
    assert (uniband["mbytes_per_s"], uniband["msg_per_s"]) == (62.49, 7810710)
    rma = parse(IMPI + "rma-unidir-bidir-np3")
    assert row_at(rma, "Unidir_put", 2, 4, mode="non-aggregate")["t_us"] == 4.10
    assert [key[2] for key in tables(rma)] == ["non-aggregate", "aggregate"] * 3


def test_nbc_on_3_ranks_has_tables_for_2_and_3():
    output = parse(IMPI + "nbc-ibcast-iallreduce-np3")
    assert [key[:2] for key in tables(output)] == [
        ("Ibcast", 2), ("Ibcast", 3), ("Ibcast_pure", 2), ("Ibcast_pure", 3),
        ("Iallreduce", 2), ("Iallreduce", 3), ("Iallreduce_pure", 2), ("Iallreduce_pure", 3)]
    row = row_at(output, "Iallreduce", 2, 0)
    assert (row["t_ovrl_us"], row["t_pure_us"], row["t_cpu_us"], row["overlap_pct"]) == (6.46, 5.29, 5.22, 76.52)
    assert "t_avg_us" in row_at(output, "Iallreduce_pure", 3, 4)


def test_multi_0_on_5_ranks_groups_waiting_process_and_msg_per_s():
    output = parse(IMPI + "mpi1-multi0-pingpong-biband-np5")
    assert list(tables(output)) == [("PingPong", 2, None, 2), ("Biband", 2, None, 2), ("Biband", 4, None, 1)]
    assert all(r["multi"] == 0 for r in output.rows)
    assert "t_max_us" in row_at(output, "PingPong", 2, 16)
    assert row_at(output, "Biband", 2, 0)["msg_per_s"] == 4773247


def test_multi_1_uniband_has_msg_per_s_per_group():
    output = parse(IMPI + "mpi1-multi1-uniband-np4")
    uniband4 = [r for r in output.rows if r["benchmark"] == "Uniband" and r["np"] == 4]
    assert [r["group"] for r in uniband4] == [0] * 6
    assert row_at(output, "Uniband", 4, 0)["msg_per_s"] == 9189306
    assert {r["group"] for r in output.rows if r["np"] == 2} == {0, 1}


IMB2021_7 = FIXTURES / "imb" / "openmpi-4.1.4-imb2021.7"
with open(IMB2021_7 / "MANIFEST.csv", newline="") as _handle:
    IMB2021_7_RUNS = list(csv.DictReader(_handle))


def test_imb_2021_7_manifest_lists_every_run():
    assert {row["file"] for row in IMB2021_7_RUNS} == {p.name for p in IMB2021_7.glob("*.out")}
    assert all((IMB2021_7 / row["file"].replace(".out", ".err")).exists() for row in IMB2021_7_RUNS)


@pytest.mark.parametrize("entry", IMB2021_7_RUNS, ids=[r["file"] for r in IMB2021_7_RUNS])
def test_imb_2021_7_runs_parse(entry):
    output = parse_imb((IMB2021_7 / entry["file"]).read_text())
    assert output.meta["version"] == entry["imb_version"] and output.rows
    assert all(r["status"] == "ok" and isinstance(r["np"], int) for r in output.rows)


def test_imb_ext_window_unidir_put_accumulate():
    output = parse_imb((IMB2021_7 / "v2021.7-ext-window-unidirput-accumulate-np3.out").read_text())
    assert output.meta["suite"] == "MPI-2"
    assert list(tables(output)) == [
        ("Window", 2, None, None), ("Window", 3, None, None),
        ("Unidir_Put", 2, "aggregate", None), ("Unidir_Put", 2, "non-aggregate", None),
        ("Accumulate", 2, "aggregate", None), ("Accumulate", 2, "non-aggregate", None),
        ("Accumulate", 3, "aggregate", None), ("Accumulate", 3, "non-aggregate", None)]
    assert {"t_min_us", "t_max_us", "t_avg_us"} <= set(row_at(output, "Window", 3, 16))
    assert {"t_us", "mbytes_per_s"} <= set(row_at(output, "Unidir_Put", 2, 16, mode="aggregate"))


def test_imb_io_banner_without_newline_waiting_processes_and_overlap():
    text = (IMB2021_7 / "v2021.7-io-swriteindv-piwriteshared-np3.out").read_text()
    assert "MPI-IO partn#---" in text and "( 2 additional processes waiting in MPI_Barrier)" in text
    output = parse_imb(text)
    assert output.meta["suite"] == "MPI-IO" and output.notes == []
    assert list(tables(output)) == [
        ("S_Write_Indv", 1, "aggregate", None), ("S_Write_Indv", 1, "non-aggregate", None),
        ("P_IWrite_Shared", 1, "aggregate", None), ("P_IWrite_Shared", 2, "aggregate", None),
        ("P_IWrite_Shared", 3, "aggregate", None)]
    row = row_at(output, "P_IWrite_Shared", 1, 4)
    assert (row["t_ovrl_us"], row["t_pure_us"], row["t_cpu_us"], row["overlap_pct"]) == (
        9449.22, 24.11, 10294.72, 100.0)
    assert row_at(output, "S_Write_Indv", 1, 16, mode="non-aggregate")["t_us"] == 214.79
