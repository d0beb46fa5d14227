"""The errors that are the user's to fix (exit 2): a bad matrix, a missing file or binary.

Each type lives with the code that raises it, on its own floor; the command, on the top floor,
gathers them here. It imports this module only when a command ends in an exception, so no
command pays for importing every floor (a third of a second, `status` included) before it runs.
"""

from __future__ import annotations

from commstack.bounds import InputTooLarge, NotText
from commstack.errors import CampaignError
from commstack.launch.builder import LaunchError
from commstack.launch.stack import StackError
from commstack.machine import MachineError
from commstack.matrix.model import MatrixError
from commstack.optional import MissingOptionalDependency
from commstack.parse_error import ParseError
from commstack.schedulers.base import SubmitError
from commstack.store.files import AlreadyExists
from commstack.store.record import RecordError

USER_ERRORS = (MatrixError, StackError, LaunchError, ParseError, AlreadyExists, CampaignError,
               FileNotFoundError, SubmitError, MachineError, RecordError,
               MissingOptionalDependency, InputTooLarge, NotText)
