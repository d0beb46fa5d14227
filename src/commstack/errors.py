"""Errors that end a command with one sentence instead of a traceback, and their exit status.

User errors (exit 2) are the user's to fix: a bad matrix, a missing file (the command gathers
their types from every floor: commstack.cli.user_errors). System errors (exit 4)
are a file operation the system refused: disk full, permission denied, a read-only file system.
Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os

USER_ERROR_EXIT = 2
SYSTEM_ERROR_EXIT = 4


class CampaignError(ValueError):
    """A results directory that is not a campaign, or a campaign with nothing to show."""


# What the file system or the machine refused; EBADF, EINVAL and the like are bugs of ours.
_FULL = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC), errno.EFBIG}
SYSTEM_ERRNOS = _FULL | {
    errno.EACCES, errno.EPERM, errno.EROFS, errno.EIO, errno.ENOTDIR, errno.EISDIR,
    errno.ENAMETOOLONG, errno.ELOOP, errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.EMLINK,
    errno.ENOTEMPTY, errno.EBUSY, errno.ETXTBSY, errno.EXDEV, getattr(errno, "ESTALE", errno.EIO),
}
# Commands that record runs: they resume where a failed one stopped.
_RESUMING = ("run", "tune")


def is_system_error(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in SYSTEM_ERRNOS


def describe_system_error(exc: OSError, command: str) -> str:
    """One sentence: which file, what the system said, that nothing recorded is lost, what to do."""
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    what = f"cannot write {paths[0]}" if exc.errno in _FULL and paths else (
        " -> ".join(paths) if paths else "a file operation failed")
    reason = (exc.strerror or os.strerror(exc.errno)).lower()
    fix = "free some space" if exc.errno in _FULL else "fix that"
    if command in _RESUMING:
        return (f"{what}: {reason}; every run recorded so far is kept, {fix} and run the same "
                "command again to resume.")
    return f"{what}: {reason}; {fix} and run the same command again."
