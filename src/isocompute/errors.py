"""Errors a user can cause; the CLI prints them as one line, no traceback."""

from isocompute.config import ConfigError


class InputError(ValueError):
    """A file a user gave is missing or malformed; the message names it."""


__all__ = ["ConfigError", "InputError"]
