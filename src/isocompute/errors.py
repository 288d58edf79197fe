"""Errors a user can cause; the CLI prints them as one line, no traceback."""


class ConfigError(ValueError):
    """A config value a user wrote is wrong; the message names the key."""


class InputError(ValueError):
    """A file a user gave is missing or malformed; the message names it."""


__all__ = ["ConfigError", "InputError"]
