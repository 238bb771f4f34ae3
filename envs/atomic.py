"""Writing a whole folder or nothing: a failure or a kill leaves the target as it was."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path


def replace_folder(out: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` on a fresh folder beside ``out``, then swap it in with renames:
    a crash leaves either the old folder or the new one, never a half-written one."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    old = None
    try:
        write(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the output should not be
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old-", dir=out.parent))
            os.rename(out, old / "data")
        os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not out.exists():
            os.rename(old / "data", out)
        raise
    finally:
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return out
