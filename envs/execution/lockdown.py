"""Kernel-level confinement applied by a worker to itself, after warm-up and
before it reads the first untrusted program.

Order matters: the network namespace needs CAP_SYS_ADMIN, so it comes before
the capabilities are dropped; Landlock and seccomp come last because they forbid
the very calls that set the earlier limits up. Each layer that the machine does
not support is reported as a warning rather than failing the worker, so the
sandbox degrades to the remaining layers instead of refusing to run.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

from . import landlock, seccomp

_CLONE_NEWNET = 0x40000000
_PR_SET_PDEATHSIG = 1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def isolate_network() -> bool:
    """Move this process into a fresh network namespace: only a downed loopback."""
    if _libc().unshare(_CLONE_NEWNET) == 0:
        return True
    return False


def disable_socket_api() -> None:
    """Fallback when no namespace is possible: make Python's socket API refuse."""
    import socket

    def refuse(*_args, **_kwargs):
        raise PermissionError("network access is disabled in the sandbox")

    for name in ("socket", "socketpair", "create_connection", "create_server", "fromfd"):
        if hasattr(socket, name):
            setattr(socket, name, refuse)


def address_space_kb() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return 0


def set_limits(memory_mb: int | None, baseline_kb: int) -> None:
    """rlimits that hold for the worker's whole life.

    The memory limit is a budget on top of what the warmed-up worker already
    maps (numpy and the tools take a few hundred MB of address space before any
    program runs), so ``memory_mb`` means the same on every machine.
    """
    if memory_mb:
        limit = baseline_kb * 1024 + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # No file can grow; a write that tries gets EFBIG instead of the default
    # SIGXFSZ death.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    # Not enforced for uid 0 (the kernel exempts root); seccomp covers that case.
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), min(hard, 256)))
    # CPU time is limited per program (see runtime.set_cpu_budget); the hard
    # limit stays open so the per-program soft limit can move forward.


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> bool:
    """Keep uid 0 (the interpreter may live under /root) but lose every privilege:
    no raising rlimits again, no CAP_KILL, no DAC override, no namespaces."""
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    return _libc().capset(ctypes.byref(header), ctypes.byref(data)) == 0


def die_with_parent(parent_pid: int) -> None:
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:  # the parent died before the prctl
        os._exit(1)


def read_roots(extra: list[str] = ()) -> list[str]:
    """Directories a worker may still read after lockdown: where code lives."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr/lib", "/usr/lib64",
             "/lib", "/lib64", "/usr/share/zoneinfo", "/dev/null", "/dev/urandom"}
    roots.update(p for p in sys.path if p and os.path.isdir(p) and p != "/")
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if path:  # editable installs and packages outside sys.prefix
            roots.add(os.path.dirname(os.path.abspath(path)))
    roots.update(extra)
    # Never grant a root that would expose the whole machine or temp space.
    return sorted(r for r in roots if r not in ("/", "/tmp", "/root", "/home", "/etc"))


def apply(memory_mb: int | None, parent_pid: int) -> tuple[list[str], list[str]]:
    """Confine this process; returns (layers applied, warnings)."""
    layers: list[str] = []
    warnings: list[str] = []
    baseline = address_space_kb()
    roots = read_roots()
    if isolate_network():
        layers.append("netns")
    else:
        disable_socket_api()
        warnings.append("could not create a network namespace (needs root or user "
                        "namespaces); the socket API is disabled instead")
    set_limits(memory_mb, baseline)
    layers.append("rlimits")
    if os.geteuid() == 0:
        if drop_capabilities():
            layers.append("no-capabilities")
        else:
            warnings.append("could not drop capabilities")
    try:
        abi = landlock.restrict_to_read_only(roots)
    except OSError as exc:
        abi = 0
        warnings.append(f"landlock failed: {exc}")
    if abi:
        layers.append(f"landlock-abi{abi}")
    else:
        warnings.append("Landlock is unavailable; file-system writes are blocked by "
                        "seccomp and RLIMIT_FSIZE only, and reads are not confined")
    try:
        if seccomp.install():
            layers.append("seccomp")
        else:
            warnings.append("no seccomp syscall table for this CPU; process creation is "
                            "blocked only by the import policy")
    except OSError as exc:
        warnings.append(f"seccomp failed: {exc}")
    die_with_parent(parent_pid)
    return layers, warnings
