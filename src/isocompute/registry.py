"""Strategies registered by name (as verl registers its advantage estimators): a class
decorator that files one instance of the class under a config value, and its lookup."""

from __future__ import annotations


def registering(registry: dict):
    """The class decorator `@decorator(name)` that files an instance of the class in `registry`."""
    def register(name: str):
        def wrap(cls):
            cls.name = name
            registry[name] = cls()
            return cls
        return wrap
    return register
