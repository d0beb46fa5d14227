"""Errors that are the user's to fix: printed as one message, exit status 2."""

from commstack.launch.command import LaunchError
from commstack.launch.stack import StackError
from commstack.launch.submit import SubmitError
from commstack.machine import MachineError
from commstack.matrix.model import MatrixError
from commstack.parsers.errors import ParseError
from commstack.store.files import AlreadyExists


class CampaignError(ValueError):
    """A results directory that is not a campaign, or a campaign with nothing to show."""


USER_ERRORS = (MatrixError, StackError, LaunchError, ParseError, AlreadyExists, CampaignError,
               FileNotFoundError, SubmitError, MachineError)
