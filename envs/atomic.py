"""Writing a whole folder or nothing: a failure or a kill leaves the target as it was."""
from __future__ import annotations

import ctypes
import errno
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one step (Linux renameat2 RENAME_EXCHANGE); False where
    the kernel, the C library or the filesystem cannot."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def swap_in(tmp: Path, out: Path) -> None:
    """Put the finished folder `tmp` at `out`, removing the old `out`. Where the system can
    exchange them in one step, `out` is never missing, not even for an instant, so a kill
    at any point leaves the old folder or the new one; elsewhere two renames leave a window
    in which a kill loses the old one."""
    tmp, out = Path(tmp), Path(out)
    if not os.path.lexists(out):
        os.rename(tmp, out)
        return
    if _exchange(tmp, out):
        shutil.rmtree(tmp, ignore_errors=True)  # now the old folder
        return
    old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
    os.rename(out, old / "data")
    try:
        os.rename(tmp, out)
    except BaseException:
        os.rename(old / "data", out)
        raise
    finally:
        shutil.rmtree(old, ignore_errors=True)


def replace_folder(out: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a fresh folder beside ``out``, then swap it in (`swap_in`):
    a crash leaves either the old folder or the new one, never a half-written one."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output should not be
        swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out
