"""Must show: a sweep's log lines say how far it is: runs of the total, failures, time left
(from the mean run time of this sweep, over the parallel slots)."""

from commstack.progress import Progress


def test_progress_counts_skipped_pairs_and_estimates_what_is_left():
    progress = Progress(total=5, parallel=1)
    progress.skipped()  # done in an earlier session
    assert progress.ran(True, 10.0) == "2/5, 0 failed, ~30s left"
    assert progress.ran(False, 30.0) == "3/5, 1 failed, ~40s left"
    progress.skipped()
    assert progress.ran(True, 20.0) == "5/5, 1 failed"


def test_parallel_slots_divide_the_time_left_and_long_waits_read_in_minutes_or_hours():
    assert Progress(total=41, parallel=2).ran(True, 120.0) == "1/41, 0 failed, ~40 min left"
    assert Progress(total=1001, parallel=1).ran(True, 60.0) == "1/1001, 0 failed, ~16.7 h left"
