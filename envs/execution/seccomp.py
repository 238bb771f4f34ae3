"""A seccomp-bpf filter for sandbox workers, built with ctypes (no libseccomp needed).

After it is installed the worker cannot start processes, open files for writing,
delete or rename files, create sockets, signal other processes or reconfigure
the kernel. Threads stay allowed (numpy and the tools may use them). Denied
calls fail with an errno instead of killing the worker, so a hostile program
gets an ordinary Python exception and the worker lives on.

Only x86_64 has a syscall table here; elsewhere ``install`` returns False and
the caller warns (Landlock and rlimits still apply).
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


def _ret_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


# x86_64 numbers. Denied outright with EPERM:
_DENY_X86_64 = {
    "fork": 57, "vfork": 58, "execve": 59, "execveat": 322,
    "socket": 41, "socketpair": 53, "connect": 42, "bind": 49, "listen": 50, "accept": 43,
    "accept4": 288, "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311,
    "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161, "unshare": 272,
    "setns": 308, "bpf": 321, "perf_event_open": 298, "keyctl": 250, "add_key": 248,
    "request_key": 249, "init_module": 175, "finit_module": 313, "delete_module": 176,
    "kexec_load": 246, "kexec_file_load": 320, "reboot": 169, "swapon": 167, "swapoff": 168,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "userfaultfd": 323, "pidfd_open": 434, "pidfd_send_signal": 424, "pidfd_getfd": 438,
    "open_by_handle_at": 304, "name_to_handle_at": 303, "fanotify_init": 300,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
    "fspick": 433, "mount_setattr": 442, "memfd_create": 319,
    "setuid": 105, "setgid": 106, "setreuid": 113, "setregid": 114, "setresuid": 117,
    "setresgid": 119, "setgroups": 116, "capset": 126, "acct": 163, "settimeofday": 164,
    "clock_settime": 227, "sethostname": 170, "setdomainname": 171, "iopl": 172,
    "ioperm": 173, "quotactl": 179, "personality": 135,
    # file-system changes
    "creat": 85, "unlink": 87, "unlinkat": 263, "rename": 82, "renameat": 264,
    "renameat2": 316, "mkdir": 83, "mkdirat": 258, "rmdir": 84, "link": 86, "linkat": 265,
    "symlink": 88, "symlinkat": 266, "chmod": 90, "fchmod": 91, "fchmodat": 268,
    "chown": 92, "fchown": 93, "lchown": 94, "fchownat": 260, "truncate": 76,
    "ftruncate": 77, "mknod": 133, "mknodat": 259, "utimensat": 280, "utime": 132,
    "utimes": 235, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
    "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199,
}
_CLONE, _CLONE3 = 56, 435
_OPEN, _OPENAT, _OPENAT2 = 2, 257, 437
_KILL, _TKILL, _TGKILL = 62, 200, 234
_CLONE_THREAD = 0x00010000
# O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND
_WRITE_FLAGS = 0o1 | 0o2 | 0o100 | 0o1000 | 0o2000


def _insn(code, jt, jf, k):
    return struct.pack("=HBBI", code, jt, jf, k & 0xFFFFFFFF)


def _arg_lo(i: int) -> int:  # offset of the low 32 bits of args[i] (little-endian)
    return 16 + 8 * i


def build_filter_x86_64(own_pid: int) -> bytes:
    deny = _ret_errno(errno.EPERM)
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),                       # A = arch
        _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),                       # A = nr
        _insn(_JSET_K, 0, 1, _X32_SYSCALL_BIT),
        _insn(_RET_K, 0, 0, deny),
    ]
    for nr in sorted(set(_DENY_X86_64.values())):
        prog += [_insn(_JEQ_K, 0, 1, nr), _insn(_RET_K, 0, 0, deny)]
    # clone3 -> ENOSYS makes glibc fall back to clone, whose flags we can inspect
    # (clone3 passes them in a struct that seccomp cannot read).
    prog += [_insn(_JEQ_K, 0, 1, _CLONE3), _insn(_RET_K, 0, 0, _ret_errno(errno.ENOSYS))]
    prog += [_insn(_JEQ_K, 0, 1, _OPENAT2), _insn(_RET_K, 0, 0, _ret_errno(errno.ENOSYS))]
    # Each block below: if nr matches, load an argument, decide, and return.
    prog += [
        _insn(_JEQ_K, 0, 4, _CLONE),
        _insn(_LD_W_ABS, 0, 0, _arg_lo(0)),
        _insn(_JSET_K, 0, 1, _CLONE_THREAD),
        _insn(_RET_K, 0, 0, _RET_ALLOW),
        _insn(_RET_K, 0, 0, deny),
    ]
    for nr, flags_arg in ((_OPEN, 1), (_OPENAT, 2)):
        prog += [
            _insn(_JEQ_K, 0, 4, nr),
            _insn(_LD_W_ABS, 0, 0, _arg_lo(flags_arg)),
            _insn(_JSET_K, 0, 1, _WRITE_FLAGS),
            _insn(_RET_K, 0, 0, _ret_errno(errno.EACCES)),
            _insn(_RET_K, 0, 0, _RET_ALLOW),
        ]
    # Signals only to ourselves (the soft timer uses SIGALRM; abort() uses tgkill).
    for nr in (_KILL, _TKILL, _TGKILL):
        prog += [
            _insn(_JEQ_K, 0, 4, nr),
            _insn(_LD_W_ABS, 0, 0, _arg_lo(0)),
            _insn(_JEQ_K, 0, 1, own_pid),
            _insn(_RET_K, 0, 0, _RET_ALLOW),
            _insn(_RET_K, 0, 0, deny),
        ]
    prog.append(_insn(_RET_K, 0, 0, _RET_ALLOW))
    return b"".join(prog)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2


def install() -> bool:
    """Install the filter on this process; False when the platform has no table."""
    if platform.machine() != "x86_64":
        return False
    program = build_filter_x86_64(os.getpid())
    buf = ctypes.create_string_buffer(program, len(program))
    fprog = _SockFprog(len(program) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter not installed: {os.strerror(err)}")
    return True
