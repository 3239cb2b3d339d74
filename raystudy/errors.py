"""Errors a user can cause. The CLI prints them as one line and exits with code 2."""


class UserError(Exception):
    """Bad input from the user: unknown study, bad override, invalid value."""


class ConfigError(UserError):
    """A profile, override or search space that does not fit the study's config."""


class DataError(UserError):
    """A data file that is missing, truncated, corrupt or of the wrong shape."""


class MissingDataError(DataError):
    """Data that is not on this machine. Attached to a cluster, the data may live there:
    the runner then notes it and goes on instead of stopping."""


class Interrupted(Exception):
    """Ctrl-C stopped a run with its state saved; ``command`` resumes it (exit code 130)."""

    def __init__(self, message: str, command: str = "") -> None:
        super().__init__(message)
        self.command = command
