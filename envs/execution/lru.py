"""A least-recently-used map bounded both in entries and in bytes."""
from __future__ import annotations

from collections import OrderedDict


class ByteLRU:
    """``put(key, value, size)``; the oldest entries go first once either bound is passed.
    The newest entry always stays, whatever its size, so a caller can read it back."""

    def __init__(self, max_bytes: int, max_items: int | None = None):
        self.max_bytes = max_bytes
        self.max_items = max_items
        self.items: OrderedDict = OrderedDict()  # key -> (size, value)
        self.bytes = 0

    def __len__(self) -> int:
        return len(self.items)

    def get(self, key, default=None):
        item = self.items.get(key)
        if item is None:
            return default
        self.items.move_to_end(key)
        return item[1]

    def put(self, key, value, size: int) -> None:
        if key in self.items:
            self.bytes -= self.items.pop(key)[0]
        self.items[key] = (size, value)
        self.bytes += size
        while len(self.items) > 1 and (
                self.bytes > self.max_bytes
                or (self.max_items is not None and len(self.items) > self.max_items)):
            _, (old_size, _) = self.items.popitem(last=False)
            self.bytes -= old_size
