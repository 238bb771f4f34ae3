"""Kernel-level confinement of the zygote (after warm-up) and of each child it forks.

Order matters: the namespaces need CAP_SYS_ADMIN, so they come before the
capabilities are dropped; Landlock and seccomp come last because they forbid the
very calls that set the earlier limits up. Everything but the memory limit, the
process limit and the child's stricter seccomp filter is applied once in the
zygote and inherited by every child. A layer the machine does not support is
reported as a warning rather than failing, so the sandbox degrades to the
remaining layers instead of refusing to run (docs/threat_model.md lists them).
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys

from . import landlock, seccomp

_CLONE_NEWNET, _CLONE_NEWIPC = 0x40000000, 0x08000000
_PR_SET_PDEATHSIG = 1
_LINUX_CAPABILITY_VERSION_3 = 0x20080522


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def isolate_network() -> bool:
    """Move this process into a fresh network namespace (only a downed loopback) and a
    fresh IPC namespace (System V shared memory, semaphores and message queues made
    here vanish with the sandbox instead of outliving it)."""
    return _libc().unshare(_CLONE_NEWNET | _CLONE_NEWIPC) == 0


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


def set_shared_limits() -> None:
    """rlimits the zygote sets for itself and every child."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # No file can grow; a write that tries gets EFBIG instead of the default
    # SIGXFSZ death.
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(soft, 256), min(hard, 256)))
    # CPU time is limited per program (runtime.SoftTimer); the hard limit stays
    # open so the per-program soft limit can move forward.


def set_child_limits(memory_mb: int | None, baseline_kb: int) -> None:
    """The memory limit is a budget on top of what the warmed-up zygote maps (numpy
    and the tools take a few hundred MB of address space before any program runs),
    so ``memory_mb`` means the same on every machine."""
    if memory_mb:
        limit = baseline_kb * 1024 + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    # Not enforced for uid 0 (the kernel exempts root); seccomp covers that case.
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))


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


def read_roots() -> list[str]:
    """What a worker may still read after lockdown: the code it has loaded, and nothing
    of where the user started from (no working directory, no ``sys.path`` entry, no home).

    - the standard library and its extension modules;
    - each imported top-level package's own directory (``site-packages/numpy``, the
      project's ``envs``), or the file itself for a single-file module;
    - the system's shared libraries (C extensions load them lazily);
    - /dev/null and /dev/urandom.
    """
    roots = {os.path.dirname(os.__file__), os.path.dirname(ctypes.__file__),
             "/usr/lib", "/usr/lib64", "/lib", "/lib64", "/dev/null", "/dev/urandom"}
    dynload = os.path.join(os.path.dirname(os.__file__), "lib-dynload")
    roots.add(dynload)
    for name, module in list(sys.modules.items()):
        if "." in name or module is None:
            continue
        paths = list(getattr(module, "__path__", None) or [])  # a package: its folders
        path = getattr(module, "__file__", None)
        if not paths and path:
            paths = [path]  # a single-file module: that file only
        roots.update(os.path.abspath(p) for p in paths if isinstance(p, str))
    # Never grant a root that would expose the whole machine, temp space or homes.
    return sorted(r for r in roots
                  if os.path.exists(r) and r not in ("/", "/tmp", "/root", "/home", "/etc"))


def apply_zygote(parent_pid: int) -> tuple[list[str], list[str]]:
    """Confine the zygote (and so every child); returns (layers applied, warnings)."""
    layers: list[str] = []
    warnings: list[str] = []
    roots = read_roots()
    if isolate_network():
        layers.append("netns")
    else:
        disable_socket_api()
        warnings.append("could not create network and IPC namespaces (needs root or user "
                        "namespaces); the socket API is disabled instead")
    set_shared_limits()
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
        if seccomp.install("zygote"):
            layers.append("seccomp")
        else:
            warnings.append("no seccomp syscall table for this CPU; process creation is "
                            "blocked only by RLIMIT_NPROC and the import policy")
    except OSError as exc:
        warnings.append(f"seccomp failed: {exc}")
    die_with_parent(parent_pid)
    return layers, warnings


def apply_child(memory_mb: int | None, baseline_kb: int, zygote_pid: int,
                layers: list[str]) -> None:
    """A freshly forked child: die with the zygote, take the per-program limits, and
    install the stricter seccomp filter (no processes, sockets or foreign signals).
    ``layers`` are those the zygote applied; a child adds to them, never more."""
    die_with_parent(zygote_pid)
    if "rlimits" in layers:
        set_child_limits(memory_mb, baseline_kb)
    if "seccomp" in layers:
        seccomp.install("child")
