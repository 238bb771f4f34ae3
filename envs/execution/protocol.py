"""Length-prefixed frames between the parent and its workers.

Parent -> worker frames are pickles (the parent is trusted; pickling numpy
arrays is fast). Worker -> parent frames are JSON, because the worker runs
untrusted code and unpickling its output could execute code in the parent.
"""
from __future__ import annotations

import json
import os
import struct

HEADER = struct.Struct("!I")
MAX_REPLY_BYTES = 1 << 20  # a reply is a small JSON object; anything bigger is hostile


def encode(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


def read_exact(fd: int, size: int) -> bytes | None:
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> bytes | None:
    """Blocking read of one frame (worker side); None on EOF."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    return read_exact(fd, HEADER.unpack(header)[0])


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send_json(fd: int, obj: dict) -> None:
    write_all(fd, encode(json.dumps(obj).encode()))


class FrameBuffer:
    """Incremental reader for the parent's non-blocking pipe ends."""

    def __init__(self):
        self.data = bytearray()

    def feed(self, chunk: bytes) -> list[dict]:
        """Add bytes; return the complete JSON frames. Raises ValueError on garbage."""
        self.data += chunk
        frames = []
        while len(self.data) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.data)
            if size > MAX_REPLY_BYTES:
                raise ValueError(f"worker reply of {size} bytes exceeds the limit")
            if len(self.data) < HEADER.size + size:
                break
            payload = bytes(self.data[HEADER.size:HEADER.size + size])
            del self.data[:HEADER.size + size]
            frame = json.loads(payload)
            if not isinstance(frame, dict):
                raise ValueError("worker reply is not an object")
            frames.append(frame)
        return frames
