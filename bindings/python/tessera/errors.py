"""Exceptions for the C API's error statuses, with the library's message (tsr_last_error)."""
from . import _capi


class TesseraError(RuntimeError):
    """A Tessera call failed. `status` is the C status name (e.g. TSR_ERR_PEER_FAILED)."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class NotSupportedError(TesseraError):
    """This algorithm or memory type cannot serve the input."""


class InvalidArgumentError(TesseraError, ValueError):
    """A bad count, dtype, op, root, key or value (the message names it)."""


class MismatchError(TesseraError):
    """Ranks called a collective with different arguments."""


class PeerFailedError(TesseraError):
    """A peer died or its connection broke (the message names the rank)."""


class CollectiveTimeoutError(TesseraError, TimeoutError):
    """A collective did not finish within TSR_TIMEOUT_MS."""


class BootstrapError(TesseraError):
    """Peers could not be reached or authenticated at startup."""


class AbortedError(TesseraError):
    """The communicator was aborted, or is unusable after an earlier error."""


class ClosedError(AbortedError, ValueError):
    """A handle used after close() (its own, or its communicator's)."""

    def __init__(self, message):
        super().__init__("TSR_ERR_ABORTED", message)


class NumericError(TesseraError, ArithmeticError):
    """NaN or Inf where a compressor cannot take it."""


class RevokedError(TesseraError):
    """A rank revoked the communicator (Communicator.revoke, tsr_comm_revoke)."""


_BY_STATUS = {2: NotSupportedError, 3: InvalidArgumentError, 4: MismatchError, 5: PeerFailedError,
              6: CollectiveTimeoutError, 7: BootstrapError, 9: AbortedError, 11: NumericError, 12: RevokedError}


def error_of(status):
    """The exception of a failed status, with this thread's tsr_last_error() message."""
    message = _capi.lib.tsr_last_error().decode(errors="replace")
    name = _capi.lib.tsr_status_string(status).decode(errors="replace")
    return _BY_STATUS.get(status, TesseraError)(name, message or name)


def check(status):
    """Raises the exception of a failed status; returns for TSR_OK."""
    if status != _capi.OK:
        raise error_of(status)
