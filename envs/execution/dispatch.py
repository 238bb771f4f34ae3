"""One batch on the pool: a single-threaded select loop in the parent.

The zygote forks children ahead of need; each program goes to an idle child with a
fresh request id and an absolute deadline. A child answers with exactly one reply
carrying that id; anything else (a forged or malformed reply, an unknown id, a
second reply, bytes while idle) is a ``protocol_error`` for that program alone and
the child is killed. A child past its deadline is killed (nothing it does can move
the deadline) and its program reported as a timeout. A child that dies is replaced
and its program retried once before it is reported as a crash. If the zygote itself
dies, a new one is started and the batch goes on.
"""
from __future__ import annotations

import pickle
import selectors
import time
import warnings
from collections import deque

from .results import ExecutionResult, format_error
from .workers import ChildHandle, ProtocolViolation, ZygoteHandle

# Time beyond timeout_s before the parent kills a child: the child's own soft
# timer normally answers first, with the program's output and a precise error.
KILL_GRACE_S = 1.0
STARTUP_TIMEOUT_S = 120.0
EXIT_REPORT_WAIT_S = 2.0  # how long to wait for the zygote to say how a child died
MAX_ATTEMPTS = 2
MAX_ZYGOTE_STARTS = 3  # consecutive starts that never became ready


class ExecutorError(RuntimeError):
    """The sandbox itself cannot run (workers fail to start), as opposed to a program failing."""


class Batch:
    def __init__(self, executor, tasks, arrays, codes, entry, bar=None):
        self.ex = executor
        self.queue = deque(tasks)
        self.attempts = dict.fromkeys(tasks, 0)
        self.arrays = arrays
        self.codes = codes
        self.entry = entry
        self.bar = bar
        self.done: dict[tuple, ExecutionResult] = {}
        self.lost: list[tuple[ChildHandle, float]] = []  # (child, give up waiting at)
        self.selector = selectors.DefaultSelector()
        self.registered: dict[int, object] = {}

    def run(self, until_ready: bool = False) -> dict:
        try:
            while True:
                self._zygote_alive()
                self._top_up()
                self._dispatch()
                if not (self.queue or self.lost or self._busy()
                        or (until_ready and not self._ready())):
                    return self.done
                self._sync_selector()
                for selkey, _ in self.selector.select(self._next_wakeup()):
                    if selkey.data is self.ex._zygote:
                        self._on_zygote()
                    elif selkey.data.state != "dead":
                        self._on_child(selkey.data)
                self._enforce_deadlines()
                self._settle_lost()
        finally:
            self.selector.close()
            for child in list(self.ex._children):  # interrupted mid-batch: busy children are unusable
                if child.state == "busy":
                    self._kill(child)

    # ------------------------------------------------------------------ pool
    def _busy(self) -> bool:
        return any(c.state == "busy" for c in self.ex._children)

    def _ready(self) -> bool:
        idle = sum(c.state == "idle" for c in self.ex._children)
        return self.ex._zygote.state == "ready" and idle >= self.ex.workers

    def _zygote_alive(self):
        zygote = self.ex._zygote
        if zygote is not None and zygote.state != "dead":
            return
        if self.ex._zygote_starts >= MAX_ZYGOTE_STARTS:
            raise ExecutorError("the sandbox zygote died during start-up "
                                f"{self.ex._zygote_starts} times; run with "
                                "Executor(debug=True) to see its stderr")
        self.ex._start_zygote()

    def _top_up(self):
        """Keep ``workers`` children; with one program per child, also ``workers`` more
        forked ahead of need, so a fork never waits on the critical path."""
        zygote = self.ex._zygote
        if zygote.state != "ready":
            return
        children = self.ex._children
        spares = self.ex.config["max_tasks_per_worker"] == 1
        target = 2 * self.ex.workers if spares else self.ex.workers
        while (len(children) < target
               and sum(c.state in ("idle", "spawning") for c in children) < self.ex.workers):
            child = zygote.spawn(self.ex._next_token())
            if child is None:
                self._zygote_died()
                return
            children.append(child)
            self.ex.stats["children_spawned"] += 1

    def _dispatch(self):
        children = self.ex._children
        busy = sum(c.state == "busy" for c in children)
        for child in list(children):
            if not self.queue or busy >= self.ex.workers:
                return
            if child.state != "idle":
                continue
            key = self.queue.popleft()
            if self._send(child, key):
                busy += 1
            else:  # gone while idle (killed from outside): it never got the program
                self.attempts[key] -= 1
                self.queue.appendleft(key)
                self._forget(child, killed=True)

    def _send(self, child: ChildHandle, key) -> bool:
        pkey, ikey, _ = key
        code, mutates = self.codes[pkey]
        child.request_id = f"{child.nonce}-{next(self.ex._tokens)}"
        array = self.arrays[ikey]
        # The child keeps recent images; this mirror (same policy, same puts) knows which.
        held = child.images.get(ikey) is not None
        child.images.put(ikey, True, array.nbytes)
        payload = pickle.dumps({
            "id": child.request_id, "code": code, "mutates_attributes": mutates,
            "image_key": ikey, "image": None if held else array, "entry": self.entry,
        }, protocol=pickle.HIGHEST_PROTOCOL)
        self.attempts[key] += 1
        child.task, child.state = key, "busy"
        child.sent_at = time.monotonic()
        child.deadline = child.sent_at + self.ex.timeout_s + KILL_GRACE_S
        return child.send(payload, child.deadline)

    def _sync_selector(self):
        live = {c.read_fd: c for c in self.ex._children if c.state == "busy"}
        zygote = self.ex._zygote
        if zygote is not None and zygote.state != "dead":
            live[zygote.sock.fileno()] = zygote
        for fd, owner in list(self.registered.items()):
            if live.get(fd) is not owner:
                self.selector.unregister(fd)
                del self.registered[fd]
        for fd, owner in live.items():
            if fd not in self.registered:
                self.selector.register(fd, selectors.EVENT_READ, owner)
                self.registered[fd] = owner

    def _next_wakeup(self):
        times = [c.deadline for c in self.ex._children if c.state == "busy"]
        times += [give_up for _, give_up in self.lost]
        zygote = self.ex._zygote
        if zygote.state == "starting":
            times.append(zygote.started_at + STARTUP_TIMEOUT_S)
        return max(0.0, min(times) - time.monotonic()) if times else 1.0

    # ------------------------------------------------------------------ zygote
    def _on_zygote(self):
        zygote = self.ex._zygote
        messages, gone = zygote.messages()
        by_token = {c.token: c for c in self.ex._children}
        for message in messages:
            if "ready" in message:
                self._on_ready(zygote, message)
            elif "fatal" in message:
                zygote.kill()
                raise ExecutorError(f"sandbox worker failed to start: {message['fatal']}")
            elif "spawned" in message:
                child = by_token.get(message["spawned"])
                if child is not None and child.state == "spawning":
                    child.pid, child.state = message.get("pid"), "idle"
            elif "exited" in message:
                child = by_token.get(message["exited"])
                if child is not None:
                    child.how = str(message.get("how"))
                    if child.state in ("idle", "spawning"):
                        self._check_start_failure(child)
                        self._forget(child)
        if gone:
            self._zygote_died()

    def _on_ready(self, zygote: ZygoteHandle, message: dict):
        zygote.state, zygote.info = "ready", message
        self.ex._ever_ready = True
        self.ex._zygote_starts = 0
        self.ex.sandbox_layers = list(message.get("layers") or [])
        for text in message.get("warnings") or []:
            if text not in self.ex.sandbox_warnings:
                self.ex.sandbox_warnings.append(text)
                warnings.warn(f"vprl sandbox: {text}", RuntimeWarning, stacklevel=5)

    def _check_start_failure(self, child: ChildHandle):
        """A child that exits before its first program may have failed to set itself up;
        if no child ever ran a program, that is the sandbox failing, not a program."""
        try:
            frames, _ = child.read()
        except ProtocolViolation:
            return
        for frame in frames:
            if "fatal" in frame and not self.ex._ever_ran:
                raise ExecutorError(str(frame["fatal"]))

    def _zygote_died(self):
        zygote = self.ex._zygote
        was_starting = zygote.state == "starting"
        zygote.kill()
        for child in list(self.ex._children):  # they die with it (PR_SET_PDEATHSIG)
            if child.state == "busy":
                child.how = child.how or "died with the sandbox zygote"
                self._lost(child)
            else:
                self._forget(child)
        if was_starting and not self.ex._ever_ready:
            raise ExecutorError("sandbox worker died during start-up; run with "
                                "Executor(debug=True) to see its stderr")

    # ------------------------------------------------------------------ children
    def _on_child(self, child: ChildHandle):
        try:
            frames, closed = child.read()
        except ProtocolViolation as exc:
            self._violation(child, str(exc))
            return
        for frame in frames:
            if child.state != "busy":
                if child.state == "idle":  # bytes with no request outstanding
                    self._kill(child)
                return
            self._on_reply(child, frame)
        if closed and child.state == "busy":
            self._lost(child)
        elif closed:
            self._forget(child)

    def _on_reply(self, child: ChildHandle, frame: dict):
        if "fatal" in frame and len(frame) == 1 and not self.ex._ever_ran:
            self._kill(child)
            raise ExecutorError(str(frame["fatal"]))
        last = frame.pop("last", None)
        reply_id = frame.pop("id", None)
        if type(reply_id) is not str or reply_id != child.request_id:
            self._violation(child, "a reply with a wrong request id")
            return
        result = ExecutionResult.from_reply(frame) if type(last) is bool else None
        if result is None:
            self._violation(child, "a malformed reply")
            return
        self.ex._ever_ran = True
        self._finish(child.task, result)
        child.task = child.request_id = child.deadline = None
        child.state = "idle"
        if last:  # it exits now: a fresh child from the zygote takes its place
            self.ex.stats["children_retired"] += 1
            self._forget(child)

    def _violation(self, child: ChildHandle, what: str):
        """The child broke the protocol: its program gets protocol_error, it is killed."""
        task = child.task if child.state == "busy" else None
        self.ex.stats["protocol_errors"] += 1
        self._kill(child)
        if task is not None:
            self._finish(task, ExecutionResult(
                "protocol_error", None, format_error(
                    f"the sandbox worker broke the protocol ({what}); it was replaced"),
                time.monotonic() - child.sent_at, None))

    def _enforce_deadlines(self):
        now = time.monotonic()
        for child in list(self.ex._children):
            if child.state == "busy" and now >= child.deadline:
                self.ex.stats["timeouts_killed"] += 1
                task = child.task
                self._kill(child)
                self._finish(task, ExecutionResult(
                    "timeout", None,
                    format_error(f"Timeout: the program ran longer than {self.ex.timeout_s:g} s"),
                    now - child.sent_at, None))
        zygote = self.ex._zygote
        if zygote.state == "starting" and now >= zygote.started_at + STARTUP_TIMEOUT_S:
            zygote.kill()
            raise ExecutorError(f"sandbox worker did not start within {STARTUP_TIMEOUT_S:g} s")

    def _lost(self, child: ChildHandle):
        """The child died with a program in hand; wait briefly for the zygote to say how."""
        child.state = "lost"
        self.ex.stats["worker_restarts"] += 1
        self.lost.append((child, time.monotonic() + EXIT_REPORT_WAIT_S))

    def _settle_lost(self):
        now = time.monotonic()
        for entry in list(self.lost):
            child, give_up = entry
            if child.how is None and now < give_up and self.ex._zygote.state != "dead":
                continue
            self.lost.remove(entry)
            key = child.task
            self._forget(child)
            if self.attempts[key] < MAX_ATTEMPTS:
                # Perhaps not the program's fault (killed from outside, OOM killer):
                # one more try on a fresh child tells the two apart.
                self.queue.appendleft(key)
                continue
            how = child.how or "stopped responding"
            self._finish(key, ExecutionResult(
                "runtime_error", None,
                format_error(f"the program crashed the sandbox worker (it {how})"), 0.0, None))

    # ------------------------------------------------------------------ helpers
    def _finish(self, key, result: ExecutionResult):
        self.done[key] = result
        self.ex.stats["executed"] += 1
        if self.bar is not None:
            self.bar.update(1)

    def _kill(self, child: ChildHandle):
        self.ex.stats["worker_restarts"] += 1
        zygote = self.ex._zygote
        if zygote is not None and zygote.state != "dead":
            zygote.kill_child(child.token)
        self._forget(child)

    def _forget(self, child: ChildHandle, killed: bool = False):
        if killed:
            self.ex.stats["worker_restarts"] += 1
        for fd in (child.write_fd, child.read_fd):
            self._unregister(fd)
        child.close()
        if child in self.ex._children:
            self.ex._children.remove(child)

    def _unregister(self, fd: int):
        if fd in self.registered:
            self.selector.unregister(fd)
            del self.registered[fd]
