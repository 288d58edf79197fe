"""Strategies registered by name (as verl registers its advantage estimators): one
`Registry` per kind, with its class decorator, its lookup and its one error."""

from __future__ import annotations


class Registry:
    """The strategies of one kind (`what`: 'method', 'pool'), by config value.

    `@registry.register(name)` files one instance of the decorated class under `name` (and
    sets its `name`); `registry.get(name)` returns it, or raises ValueError naming the
    registered ones. Iterating gives the names, in the order they were registered."""

    def __init__(self, what: str):
        self.what = what
        self._items: dict[str, object] = {}

    def register(self, name: str):
        def wrap(cls):
            cls.name = name
            self._items[name] = cls()
            return cls
        return wrap

    def get(self, name: str):
        if name not in self._items:
            raise ValueError(f"{self.what} must be one of {', '.join(self._items)}; got {name!r}")
        return self._items[name]

    def __contains__(self, name) -> bool:
        return name in self._items

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)
