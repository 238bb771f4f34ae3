"""Length-prefixed frames between the parent and a sandbox child.

Parent -> child frames are pickles (the parent is trusted; pickling numpy arrays is
fast). Child -> parent frames are JSON, because the child runs untrusted code and
unpickling its output could execute code in the parent. The parent reads them with
``FrameBuffer``, which never raises anything but ``ProtocolViolation``: a frame that is
too big, not JSON, nested too deeply, holds a number Python refuses to parse, or is
not an object, is the child's fault and becomes that program's ``protocol_error``.
"""
from __future__ import annotations

import json
import os
import struct

HEADER = struct.Struct("!I")
MAX_REPLY_BYTES = 1 << 20  # a reply is a small JSON object; anything bigger is hostile


class ProtocolViolation(Exception):
    """A child sent something other than one well-formed reply to its request."""


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
    """Blocking read of one frame (child side); None on EOF."""
    header = read_exact(fd, HEADER.size)
    if header is None:
        return None
    return read_exact(fd, HEADER.unpack(header)[0])


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def send_json(fd: int, obj: dict) -> None:
    # ensure_ascii: lone surrogates in a program's text travel as escapes instead of
    # failing to encode; the parent replaces them (results.clean_text).
    write_all(fd, encode(json.dumps(obj, ensure_ascii=True).encode("ascii")))


class FrameBuffer:
    """Incremental reader for the parent's non-blocking pipe ends."""

    def __init__(self):
        self.data = bytearray()

    def feed(self, chunk: bytes) -> list[dict]:
        """Add bytes; return the complete frames, or raise ProtocolViolation."""
        self.data += chunk
        frames = []
        while len(self.data) >= HEADER.size:
            (size,) = HEADER.unpack_from(self.data)
            if size > MAX_REPLY_BYTES:
                raise ProtocolViolation(f"a reply of {size} bytes (the limit is "
                                        f"{MAX_REPLY_BYTES})")
            if len(self.data) < HEADER.size + size:
                break
            payload = bytes(self.data[HEADER.size:HEADER.size + size])
            del self.data[:HEADER.size + size]
            try:
                frame = json.loads(payload)
            except Exception as exc:  # ValueError, RecursionError, UnicodeDecodeError, ...
                raise ProtocolViolation(f"a reply that is not valid JSON "
                                        f"({type(exc).__name__})") from None
            if type(frame) is not dict:
                raise ProtocolViolation("a reply that is not a JSON object")
            frames.append(frame)
        if len(self.data) > MAX_REPLY_BYTES + HEADER.size:
            raise ProtocolViolation("a reply larger than the limit")
        return frames
