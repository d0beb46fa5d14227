"""Must show: a fault ends a command with one sentence and a documented exit status, never a
traceback, and loses nothing: a disk that fills mid-sweep (exit 4, no temporary left, the rerun
completes every record), a results directory that cannot be written (exit 4), a YAML alias bomb
(refused in a short message, quickly, in little memory); temporaries left by a killed writer are
removed by the next run; every subcommand's help is a whole sentence."""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from textwrap import dedent
from typing import Dict, Iterator, List

import pytest

from commstack import errors
from tests.sweeps import commstack, ok_counts, start

SWEEP = dedent("""
    benchmark: imb-mpi1
    repeats: {repeats}
    timeout: 120
    stacks:
      impi: {{flavour: intelmpi, prefix: "${{I_MPI_ROOT}}"}}
    parameters:
      benchmarks: PingPong Allreduce
      msglog: "0:4"
      iter: 20
    product:
      ranks_per_node: [2]
      I_MPI_ADJUST_ALLREDUCE: [1, 2, 3]
    """)
POINTS = 3
DISK_FULL = re.compile(
    r"^commstack run: error: cannot write (?P<path>/\S+): no space left on device; every run "
    r"recorded so far is kept, free some space and run the same command again to resume\.$")


def _matrix(tmp_path: Path, repeats: int) -> Path:
    path = tmp_path / "matrices" / "local" / "faults.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SWEEP.format(repeats=repeats))
    return path


def _temporaries(root: Path) -> List[Path]:
    return sorted(root.rglob(".*.tmp"))


def _records(root: Path) -> Dict[Path, bytes]:
    """Every record file and its bytes; each must be whole JSON (a half-written one fails here)."""
    found = {path: path.read_bytes() for path in root.glob("points/*/rep*.try*/record.json")}
    for data in found.values():
        json.loads(data)
    return found


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted as the results directory."""
    if os.geteuid() != 0:
        pytest.skip("skipped: mounting a small tmpfs as the results directory needs root")
    mount = tmp_path / "results"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "commstack-test",
                           str(mount)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"skipped: cannot mount a tmpfs here ({done.stderr.strip()})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "--lazy", str(mount)], check=True)


def _fill(disk: Path) -> Path:
    """Write a file that takes every free block of `disk`."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for chunk in (b"\0" * (1 << 20), b"\0" * 4096, b"\0"):
            try:
                while True:
                    os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)
    return filler


@pytest.mark.mpi
def test_disk_full_mid_sweep_ends_in_one_sentence_and_the_rerun_completes(
        impi_root, tmp_path, small_disk):
    repeats = 10  # 30 runs: the disk fills after the second, long before the sweep could end
    matrix = _matrix(tmp_path, repeats)
    campaign = small_disk / "local" / "faults"
    sweep = start("run", str(matrix), "--out", str(small_disk))
    deadline = time.time() + 120
    while len(_records(campaign)) < 2 and sweep.poll() is None and time.time() < deadline:
        time.sleep(0.05)
    assert sweep.poll() is None, sweep.communicate()[1][-3000:]
    filler = _fill(small_disk)
    _, stderr = sweep.communicate(timeout=300)

    assert sweep.returncode == errors.SYSTEM_ERROR_EXIT, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    match = DISK_FULL.match(last)
    assert match, last
    unwritten = Path(match.group("path"))
    assert unwritten.is_relative_to(campaign) and not unwritten.exists()
    assert _temporaries(small_disk) == []
    before = _records(campaign)
    assert len(before) >= 2
    assert all(json.loads(data)["status"] == "ok" for data in before.values())

    filler.unlink()
    rerun = commstack("run", str(matrix), "--out", str(small_disk))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    counts = ok_counts(campaign)
    assert len(counts) == POINTS * repeats and set(counts.values()) == {1}
    assert _temporaries(small_disk) == []
    after = _records(campaign)
    assert {path: after.get(path) for path in before} == before  # nothing lost or rewritten


def test_a_failed_write_leaves_no_temporary(tmp_path):
    """A write the system refuses (a file-size limit: EFBIG, as ENOSPC would) raises an error
    naming the file and leaves neither the file nor its temporary."""
    target = tmp_path / "record.json"
    code = dedent("""
        import resource, signal, sys
        from pathlib import Path
        from commstack.store.files import write_new
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            write_new(Path(sys.argv[1]), b"x" * 100000)
        except OSError as exc:
            print(exc.errno, exc.filename)
        """)
    done = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.split() == ["27", str(target)], done.stderr  # EFBIG
    assert list(tmp_path.iterdir()) == []


def _snapshot(root: Path) -> Dict[Path, bytes]:
    return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.name.endswith(".tmp")}


@pytest.mark.mpi
def test_next_run_removes_temporaries_of_killed_writers_only(impi_root, tmp_path):
    matrix = _matrix(tmp_path, repeats=2)
    out = tmp_path / "results"
    first = commstack("run", str(matrix), "--out", str(out), "--repeat", "1")
    assert first.returncode == 0, first.stderr[-3000:]
    campaign = out / "local" / "faults"
    point = sorted(p.name for p in (campaign / "points").iterdir())[0]

    # A runner killed while it writes the record of the repeat it claimed.
    host = socket.gethostname()
    killed = subprocess.Popen([sys.executable, "-c", (
        "import os, signal, sys\nfrom pathlib import Path\nfrom commstack.store import files\n"
        "from commstack.store.campaign import Campaign\n"
        "_, attempt = Campaign(Path(sys.argv[1])).claim(sys.argv[2], 2)\n"
        "files._temporary(attempt.record_path, b'half')\nos.kill(os.getpid(), signal.SIGKILL)\n"),
        str(campaign), point])
    assert killed.wait(timeout=60) == -signal.SIGKILL
    attempt = campaign / "points" / point / "rep2.try1"
    stale = attempt / f".record.json.{killed.pid}@{host}.tmp"
    assert stale.exists() and not (attempt / "record.json").exists()
    older = campaign / f".records.csv.{killed.pid}.tmp"  # as commstack named them before
    older.write_bytes(b"half")
    live = attempt / f".stdout.txt.{os.getpid()}@{host}.tmp"  # this process is alive
    live.write_bytes(b"half")
    elsewhere = attempt / f".stderr.txt.{killed.pid}@not-{host}.tmp"  # another host's writer
    elsewhere.write_bytes(b"half")
    results = _snapshot(campaign)

    again = commstack("run", str(matrix), "--out", str(out))
    assert again.returncode == 0, again.stderr[-3000:]
    assert not stale.exists() and not older.exists()
    assert live.exists() and elsewhere.exists()
    kept = _snapshot(campaign)
    assert {path: kept.get(path) for path in results if path.name != ".status.log"} == {
        path: data for path, data in results.items() if path.name != ".status.log"}
    assert (campaign / "points" / point / "rep2.try2" / "record.json").is_file()


def _as_unprivileged(argv: List[str]) -> List[str]:
    """argv run without the root's right to ignore file permissions."""
    if os.geteuid() != 0:
        return argv
    if shutil.which("setpriv") is None:
        pytest.skip("skipped: running as root without setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", "--", *argv]


def test_unwritable_results_directory_ends_in_one_sentence(impi_root, tmp_path):
    matrix = _matrix(tmp_path, repeats=1)
    out = tmp_path / "results"
    out.mkdir(mode=0o500)
    try:
        done = subprocess.run(_as_unprivileged(
            [sys.executable, "-m", "commstack", "run", str(matrix), "--out", str(out)]),
            capture_output=True, text=True, timeout=300)
    finally:
        out.chmod(0o700)
    assert done.returncode == errors.SYSTEM_ERROR_EXIT, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        f"commstack run: error: {out / 'local'}: permission denied; every run recorded so far is "
        "kept, fix that and run the same command again to resume."]
    assert list(out.iterdir()) == []


def test_a_bug_is_not_taken_for_a_system_error():
    """EBADF, EINVAL and the like are ours to fix: they keep their traceback."""
    with pytest.raises(OSError) as bad_descriptor:
        os.fstat(-1)
    assert not errors.is_system_error(bad_descriptor.value)
    with pytest.raises(OSError) as full:
        with open("/dev/full", "wb") as fh:
            fh.write(b"x")
            fh.flush()
    assert errors.is_system_error(full.value)


# A YAML "billion laughs": nine levels of ten aliases, a list of 10**9 items.
ALIASES = ["x:", "  - &l0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
    f"  - &l{i} [" + ", ".join([f"*l{i - 1}"] * 10) + "]" for i in range(1, 9)]
BOMBS = {
    "product.iter[0]": "benchmark: imb-mpi1\nstacks: {impi: {flavour: intelmpi}}\n"
                       "product: {iter: *l8}",
    "parameters.iter": "benchmark: imb-mpi1\nstacks: {impi: {flavour: intelmpi}}\n"
                       "parameters: {iter: *l8}",
    "exclude[0].iter": "benchmark: imb-mpi1\nstacks: {impi: {flavour: intelmpi}}\n"
                       "product: {iter: [1, 2]}\nexclude: [{iter: *l8}]",
    "stacks.impi.env.FOO": "benchmark: imb-mpi1\nstacks: {impi: {flavour: intelmpi, "
                           "env: {FOO: *l8}}}",
    "benchmark": "benchmark: *l8\nstacks: {impi: {flavour: intelmpi}}",
}


@pytest.mark.parametrize("key", list(BOMBS))
def test_alias_bomb_is_refused_in_a_short_message_quickly(tmp_path, key):
    matrix = tmp_path / "bomb.yaml"
    matrix.write_text("\n".join(ALIASES) + "\n" + BOMBS[key] + "\n")
    # The command in a Python that reports its peak memory after it. VmHWM is this process's own
    # high-water mark; ru_maxrss would carry over the forking pytest's size across exec (324 MB
    # late in a CI run).
    code = ("import re, sys\nfrom commstack.cli import main\ncode = main(sys.argv[1:])\n"
            "hwm = re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1)\n"
            "print('maxrss', hwm, file=sys.stderr)\n"
            "sys.exit(code)\n")
    begin = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code, "plan", str(matrix)], capture_output=True,
                          text=True, timeout=300)
    seconds = time.monotonic() - begin
    *lines, peak = done.stderr.splitlines()
    assert done.returncode == errors.USER_ERROR_EXIT, done.stderr[-3000:]
    assert any(f": {key}: " in line and "(10 items)" in line for line in lines), lines
    assert sum(map(len, lines)) < 5000 and max(map(len, lines)) < 400, lines
    assert seconds < 60  # 0.2 s here; the whole repr of the value would take minutes
    assert int(peak.split()[1]) < 300_000  # KiB; 30 MB here, the whole repr would take gigabytes


def test_every_subcommand_help_is_a_whole_sentence():
    done = commstack("--help")
    assert done.returncode == 0, done.stderr
    listing = done.stdout.split("COMMAND\n", 1)[1].split("\n\n", 1)[0]
    helps: Dict[str, str] = {}
    for line in listing.splitlines():
        name, _, text = line.strip().partition(" ")
        if line.startswith("    ") and not line.startswith("     "):
            helps[name] = text.strip()
        else:
            last = list(helps)[-1]  # a long name ("dashboard") puts its help on the next line
            helps[last] = (helps[last] + " " + line.strip()).strip()
    from commstack.cli import COMMANDS

    assert set(helps) == set(COMMANDS)
    for name, text in helps.items():
        assert text[0].isupper() and text.endswith("."), (name, text)
        assert text.count("(") == text.count(")"), (name, text)
    assert "4 " in done.stdout.split("exit status:", 1)[1]


@pytest.mark.parametrize("command", ["status", "report", "import"])
def test_a_subcommand_imports_its_own_module_only(command):
    """`commstack status` does not pay for compare's, plan's or tune's imports (0.6 s)."""
    code = ("import sys\nfrom commstack.cli import main\n"
            f"try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('commstack.cli.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split("\n")[-2].split())
    from commstack.cli import COMMANDS

    others = {f"commstack.cli.{m}" for n, m in COMMANDS.items() if n != command}
    assert f"commstack.cli.{COMMANDS[command]}" in loaded
    assert not loaded & others, loaded
