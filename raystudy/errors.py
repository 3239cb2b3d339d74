"""Errors a user can cause. The CLI prints them as one line and exits with code 2."""


class UserError(Exception):
    """Bad input from the user: unknown study, bad override, invalid value."""


class ConfigError(UserError):
    """A profile, override or search space that does not fit the study's config."""


class DataError(UserError):
    """A data file that is missing, truncated, corrupt or of the wrong shape."""
