"""Seccomp-bpf allowlists for the zygote and its children, built with ctypes.

Two filters stack (the kernel applies the stricter verdict of all installed filters):

- the zygote's, installed after warm-up: what a warmed-up Python process needs to
  compute, plus forking, reaping and killing its children and connecting a new
  child to a tool host's Unix socket;
- each child's, installed right after the fork, before it reads a program: the same
  without process creation, sockets, waiting, signalling other processes, changing
  rlimits of others or clearing its death signal.

Every system call not named here fails with EPERM (a few with ENOSYS, where the C
library falls back to an older call). Denied calls fail rather than kill, so a
hostile program gets an ordinary Python exception and the parent a normal reply.

Only x86_64 has a syscall table here; elsewhere ``install`` returns False and the
caller warns (Landlock, namespaces and rlimits still apply).
"""
from __future__ import annotations

import ctypes
import errno
import os
import platform
import struct

_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000

# struct sock_filter opcodes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JSET_K = 0x45
_RET_K = 0x06
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000

# x86_64 numbers of calls allowed without conditions, in both filters. They read,
# compute, map memory, wait and signal themselves; none creates or changes a file,
# a process, a namespace, an IPC object or another process's limits.
ALLOWED = {
    "read": 0, "write": 1, "close": 3, "stat": 4, "fstat": 5, "lstat": 6, "poll": 7,
    "lseek": 8, "mmap": 9, "mprotect": 10, "munmap": 11, "brk": 12, "rt_sigaction": 13,
    "rt_sigprocmask": 14, "rt_sigreturn": 15, "pread64": 17, "readv": 19, "writev": 20,
    "access": 21, "pipe": 22, "select": 23, "sched_yield": 24, "mremap": 25, "mincore": 27,
    "madvise": 28, "dup": 32, "dup2": 33, "pause": 34, "nanosleep": 35, "getitimer": 36,
    "alarm": 37, "setitimer": 38, "getpid": 39, "sendto": 44, "recvfrom": 45,
    "sendmsg": 46, "recvmsg": 47, "shutdown": 48, "getsockname": 51, "getpeername": 52,
    "setsockopt": 54, "getsockopt": 55, "exit": 60, "uname": 63, "fcntl": 72,
    "fsync": 74, "fdatasync": 75, "getdents": 78, "getcwd": 79, "readlink": 89,
    "gettimeofday": 96, "getrlimit": 97, "getrusage": 98, "sysinfo": 99, "times": 100,
    "getuid": 102, "getgid": 104, "geteuid": 107, "getegid": 108, "getppid": 110,
    "getpgrp": 111, "getgroups": 115, "getresuid": 118, "getresgid": 120, "getpgid": 121,
    "getsid": 124, "capget": 125, "rt_sigpending": 127, "rt_sigtimedwait": 128,
    "rt_sigsuspend": 130, "sigaltstack": 131, "statfs": 137, "fstatfs": 138,
    "getpriority": 140, "sched_getparam": 143, "sched_getscheduler": 145,
    "sched_get_priority_max": 146, "sched_get_priority_min": 147, "arch_prctl": 158,
    "setrlimit": 160, "gettid": 186, "time": 201, "futex": 202, "sched_getaffinity": 204,
    "epoll_create": 213, "getdents64": 217, "set_tid_address": 218, "restart_syscall": 219,
    "fadvise64": 221, "timer_create": 222, "timer_settime": 223, "timer_gettime": 224,
    "timer_getoverrun": 225, "timer_delete": 226, "clock_gettime": 228, "clock_getres": 229,
    "clock_nanosleep": 230, "exit_group": 231, "epoll_wait": 232, "epoll_ctl": 233,
    "get_mempolicy": 239, "newfstatat": 262, "readlinkat": 267, "faccessat": 269,
    "pselect6": 270, "ppoll": 271, "set_robust_list": 273, "get_robust_list": 274,
    "epoll_pwait": 281, "timerfd_create": 283, "eventfd": 284, "timerfd_settime": 286,
    "timerfd_gettime": 287, "eventfd2": 290, "epoll_create1": 291, "dup3": 292, "pipe2": 293,
    "preadv": 295, "getcpu": 309, "seccomp": 317, "getrandom": 318, "membarrier": 324,
    "preadv2": 327, "statx": 332, "rseq": 334, "close_range": 436, "faccessat2": 439,
    "epoll_pwait2": 441,
}
# Allowed in the zygote only: it forks children (each in a session of its own), reaps
# and kills them, and may open a Unix socket to a tool host for a new child (before
# the child locks itself down).
ZYGOTE_ONLY = {"wait4": 61, "waitid": 247, "connect": 42, "setsid": 112}
# glibc falls back to an older call when these answer ENOSYS (clone3 -> clone, whose
# flags a filter can read; openat2 -> openat, whose flags it can read).
_ENOSYS = {"clone3": 435, "openat2": 437}

_CLONE, _SOCKET, _KILL, _TKILL, _TGKILL = 56, 41, 62, 200, 234
_OPEN, _OPENAT, _IOCTL, _PRCTL, _PRLIMIT64 = 2, 257, 16, 157, 302
_CLONE_THREAD = 0x00010000
_CLONE_NEW_ANY = 0x7E020080  # NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET|NEWTIME
_AF_UNIX = 1
# O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND | O_TMPFILE's __O_TMPFILE bit
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000 | 0o20000000
# Terminal and fd-flag queries that Python and numpy make; file-attribute ioctls
# (FS_IOC_SETFLAGS, FS_IOC_FSSETXATTR, ...) are not among them.
_IOCTLS = (0x5401, 0x5413, 0x541B, 0x5421, 0x5450, 0x5451)  # TCGETS TIOCGWINSZ FIONREAD FIONBIO FIONCLEX FIOCLEX
# prctl options: reads, thread names, more seccomp filters, no_new_privs. Not
# PR_SET_PDEATHSIG (a child may not clear the death signal that ties it to its
# parent), PR_SET_CHILD_SUBREAPER, PR_SET_DUMPABLE, PR_SET_PTRACER, PR_SET_MM.
_PRCTL_ALWAYS = (2, 3, 15, 16, 21, 22, 23, 38, 39)
_PR_SET_PDEATHSIG = 1


def _insn(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_lo(i: int) -> int:  # offset of the low 32 bits of args[i] (little-endian)
    return 16 + 8 * i


def _one_of(nr: int, arg: int, values, deny: int) -> list[bytes]:
    """If the call is ``nr``: allow it when args[arg] is one of ``values``, else deny.
    A call that is not ``nr`` jumps over the block with A (the number) unchanged. Only
    the low 32 bits are compared: every argument tested here is a C int, which the
    kernel truncates the same way."""
    n = len(values)
    body = [_insn(_LD_W_ABS, 0, 0, _arg_lo(arg))]
    body += [_insn(_JEQ_K, n - k, 0, value) for k, value in enumerate(values)]
    body += [_insn(_RET_K, 0, 0, deny), _insn(_RET_K, 0, 0, _RET_ALLOW)]
    return [_insn(_JEQ_K, 0, len(body), nr)] + body


def _flags(nr: int, arg: int, must_have: int, must_not: int, deny: int) -> list[bytes]:
    """If the call is ``nr``: allow it when args[arg] has every bit of ``must_have`` and
    none of ``must_not``, else deny."""
    body = [_insn(_LD_W_ABS, 0, 0, _arg_lo(arg))]
    if must_not:
        body.append(_insn(_JSET_K, 1, 0, must_not))  # -> deny
    if must_have:
        body.append(_insn(_JSET_K, 1, 0, must_have))                       # -> allow
        body += [_insn(_RET_K, 0, 0, deny), _insn(_RET_K, 0, 0, _RET_ALLOW)]
    else:
        body += [_insn(_RET_K, 0, 0, _RET_ALLOW), _insn(_RET_K, 0, 0, deny)]
    return [_insn(_JEQ_K, 0, len(body), nr)] + body


def build_filter(profile: str, own_pid: int) -> bytes:
    """The BPF program for ``profile`` ("zygote" or "child") of process ``own_pid``."""
    if profile not in ("zygote", "child"):
        raise ValueError(f"unknown seccomp profile {profile!r}")
    zygote = profile == "zygote"
    eperm = 0x00050000 | errno.EPERM
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),                       # A = arch
        _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),                       # A = nr
        _insn(_JSET_K, 0, 1, _X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, eperm),
    ]
    allowed = dict(ALLOWED, **(ZYGOTE_ONLY if zygote else {}))
    for nr in sorted(set(allowed.values())):
        prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, _RET_ALLOW)]
    for nr in _ENOSYS.values():
        prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, 0x00050000 | errno.ENOSYS)]
    # Threads always; processes (without new namespaces) only in the zygote.
    prog += _flags(_CLONE, 0, 0 if zygote else _CLONE_THREAD, _CLONE_NEW_ANY, eperm)
    # Files open for reading only (Landlock limits which ones).
    prog += _flags(_OPEN, 1, 0, _WRITE_FLAGS, 0x00050000 | errno.EACCES)
    prog += _flags(_OPENAT, 2, 0, _WRITE_FLAGS, 0x00050000 | errno.EACCES)
    prog += _one_of(_IOCTL, 1, _IOCTLS, eperm)
    prog += _one_of(_PRCTL, 0, _PRCTL_ALWAYS + ((_PR_SET_PDEATHSIG,) if zygote else ()), eperm)
    # Resource limits of this process only (pid 0 means "myself").
    prog += _one_of(_PRLIMIT64, 0, (0, own_pid), eperm)
    if zygote:
        # The zygote kills its children; the child filter, evaluated as well in a
        # child, narrows signals to the child itself. A Unix socket for a child's
        # tool-host connection, made before the child locks itself down.
        for nr in (_KILL, _TKILL, _TGKILL):
            prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, _RET_ALLOW)]
        prog += _one_of(_SOCKET, 0, (_AF_UNIX,), eperm)
    else:  # signals to itself only (the soft timer's SIGALRM, abort()'s tgkill)
        for nr in (_KILL, _TKILL, _TGKILL):
            prog += _one_of(nr, 0, (own_pid,), eperm)
    prog.append(_insn(_RET_K, 0, 0, eperm))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


def supported() -> bool:
    return platform.machine() == "x86_64"


def install(profile: str) -> bool:
    """Install ``profile``'s filter on this process; False when the platform has no table."""
    if not supported():
        return False
    program = build_filter(profile, os.getpid())
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter not installed: {os.strerror(err)}")
    return True
