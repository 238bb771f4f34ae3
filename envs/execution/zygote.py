"""The zygote: ``workers.sandbox_command("envs.execution.zygote", CTL_FD)``.

One per Executor. It warms up once (imports, tools, one program run), locks itself
down (lockdown.apply_zygote), and then only forks: for each ``spawn`` message from
the parent, which carries the two pipe ends of a new child, it forks a child that
runs programs (worker.child_main). It never runs a program itself, so every child
starts from the same clean, warmed-up state. It also kills children on request
(it is their parent, so a pid it kills cannot have been reused) and reports how
each one ended.

Control messages travel on a SOCK_SEQPACKET socket: pickles from the parent (the
trusted side), JSON back.
"""
from __future__ import annotations

import json
import os
import pickle
import select
import signal
import socket
import sys
import traceback

MAX_MESSAGE = 1 << 16


def describe_status(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"exited with code {os.waitstatus_to_exitcode(status)}"


class Zygote:
    def __init__(self, ctl: socket.socket):
        self.ctl = ctl
        self.children: dict[int, int] = {}  # pid -> token

    def send(self, message: dict) -> None:
        self.ctl.send(json.dumps(message).encode())

    def start(self) -> bool:
        config = pickle.loads(self.ctl.recv(MAX_MESSAGE))
        try:
            from . import lockdown
            from .worker import Warm

            self.warm = Warm(config)
            self.baseline_kb = lockdown.address_space_kb()
            layers, warnings = (lockdown.apply_zygote(config["parent_pid"])
                                if config["lockdown"] else ([], ["lockdown disabled"]))
            self.layers = layers
        except BaseException as exc:  # noqa: B036 - report every start-up failure
            detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            self.send({"fatal": detail})
            return False
        try:
            self.warm.freeze()
        except BaseException as exc:  # noqa: B036
            self.send({"fatal": f"cannot freeze the warmed-up state: {exc}"})
            return False
        self.send({"ready": True, "pid": os.getpid(), "layers": layers, "warnings": warnings})
        return True

    def serve(self) -> None:
        wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, lambda *_: None)
        self.wake = (wake_r, wake_w)
        while True:
            ready, _, _ = select.select([self.ctl, wake_r], [], [])
            if wake_r in ready:
                while True:
                    try:
                        if not os.read(wake_r, 512):
                            break
                    except BlockingIOError:
                        break
                self.reap()
            if self.ctl in ready and not self.on_message():
                return

    def on_message(self) -> bool:
        try:
            data, fds, _, _ = socket.recv_fds(self.ctl, MAX_MESSAGE, 2)
        except InterruptedError:
            return True
        if not data:  # the parent is gone, or closing: take every child down with us
            for pid in self.children:
                os.kill(pid, signal.SIGKILL)
            for pid in self.children:
                try:
                    os.waitpid(pid, 0)
                except ChildProcessError:
                    pass
            return False
        message = pickle.loads(data)
        if message["op"] == "spawn":
            self.spawn(message["token"], fds)
        elif message["op"] == "kill":
            for pid, token in self.children.items():
                if token == message["token"]:
                    os.kill(pid, signal.SIGKILL)
        return True

    def spawn(self, token: int, fds: list[int]) -> None:
        req_fd, rep_fd = fds
        pid = os.fork()
        if pid == 0:
            try:
                # Its own session, as each worker had before the zygote: the scheduler
                # (autogroup) shares CPU between sessions, so children that shared the
                # zygote's session would share one slice on a busy machine.
                os.setsid()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                for fd in (*self.wake, self.ctl.fileno()):
                    os.close(fd)
                from .worker import child_main

                child_main(self.warm, req_fd, rep_fd, self.baseline_kb, os.getppid(), self.layers)
            finally:
                os._exit(1)
        os.close(req_fd)
        os.close(rep_fd)
        self.children[pid] = token
        self.send({"spawned": token, "pid": pid})

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            token = self.children.pop(pid, None)
            if token is not None:
                self.send({"exited": token, "how": describe_status(status)})


def main() -> int:
    ctl = socket.socket(fileno=int(sys.argv[1]))
    devnull = os.open(os.devnull, os.O_RDWR)
    os.dup2(devnull, 0)
    os.dup2(devnull, 1)
    os.close(devnull)
    import warnings

    warnings.simplefilter("ignore")  # warnings would read source files and print
    zygote = Zygote(ctl)
    if not zygote.start():
        return 1
    try:
        zygote.serve()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the parent went away mid-message
    return 0


if __name__ == "__main__":
    sys.exit(main())
