"""The one least-recently-used map of the project, bounded in entries and optionally
in bytes; the sandbox, the tool host and the perception caches all use it."""
from __future__ import annotations

from collections import OrderedDict

_MISSING = object()


class LRU:
    """``put(key, value, size=0)``; the oldest entries go first once either bound is
    passed.  The newest entry always stays, whatever its size, so a caller can read it
    back.  Not thread-safe: callers that share one across threads hold their own lock."""

    def __init__(self, max_items: int | None = None, max_bytes: int | None = None):
        self.max_items = max_items
        self.max_bytes = max_bytes
        self.items: OrderedDict = OrderedDict()  # key -> (size, value)
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, key) -> bool:
        return key in self.items

    def clear(self) -> None:
        self.items.clear()
        self.bytes = 0

    def get(self, key, default=None):
        item = self.items.get(key, _MISSING)
        if item is _MISSING:
            return default
        self.items.move_to_end(key)
        return item[1]

    def put(self, key, value, size: int = 0):
        if key in self.items:
            self.bytes -= self.items.pop(key)[0]
        self.items[key] = (size, value)
        self.bytes += size
        while len(self.items) > 1 and (
                (self.max_bytes is not None and self.bytes > self.max_bytes)
                or (self.max_items is not None and len(self.items) > self.max_items)):
            _, (old_size, _) = self.items.popitem(last=False)
            self.bytes -= old_size
        return value

    def remember(self, key, compute):
        """The cached value for ``key``, computing and keeping it on a miss."""
        item = self.items.get(key, _MISSING)
        if item is not _MISSING:
            self.items.move_to_end(key)
            return item[1]
        return self.put(key, compute())
