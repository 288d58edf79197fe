"""Strategies registered by name (as verl registers its advantage estimators): one
`Registry` per kind, with its decorator, its lookup and its one error."""

from __future__ import annotations

import importlib


class Registry:
    """The strategies of one kind (`what`: 'method', 'pool', 'backend'), by config value.

    `@registry.register(name)` files the decorated class under `name` as one instance of it
    (and sets its `name`), or a decorated function as it is; `registry.get(name)` returns it,
    or raises ValueError naming the registered ones (the class `error`, naming the config
    `key`, where given). With `package`, a name not yet registered is looked up by importing
    `<package>.<name>` first (a backend's module is imported only when it is asked for).
    Iterating gives the names, in the order they were registered."""

    def __init__(self, what: str, *, key: str | None = None, error: type[ValueError] = ValueError,
                 package: str | None = None):
        self.what, self.key, self.error, self.package = what, key, error, package
        self._items: dict[str, object] = {}

    def register(self, name: str):
        def wrap(obj):
            if isinstance(obj, type):
                obj.name = name
                self._items[name] = obj()
            else:
                self._items[name] = obj
            return obj
        return wrap

    def get(self, name: str):
        if name not in self._items and self.package is not None:
            try:
                importlib.import_module(f"{self.package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{self.package}.{name}":
                    raise
        if name not in self._items:
            where = f"config key '{self.key}': " if self.key else ""
            known = ", ".join(self._items) or "none registered"
            raise self.error(f"{where}{self.what} must be one of {known}; got {name!r}")
        return self._items[name]

    def __contains__(self, name) -> bool:
        return name in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
