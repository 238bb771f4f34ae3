"""Hostile programs against the sandbox: each must get the right status, leave no
side effect, return within timeout + 2 s, and leave the pool able to run the
next batch.

Two executors are used. ``plain`` runs programs as a model would write them, so
most attacks stop at the static policy or the restricted runtime. ``leaky``
hands programs raw ``os``/``subprocess``/``socket`` functions, as if they had
escaped the Python-level layers; it shows that the kernel layers (seccomp,
Landlock, network namespace, rlimits) hold on their own.
"""
import os
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from envs.execution import Executor

TIMEOUT = 1.0
IMAGE = np.zeros((32, 32, 3), np.uint8)


def leaky_namespace(backend="plain"):
    """Worker-side factory (imported by the worker): deliberately exposes primitives."""
    import signal as signal_module

    def connect(port):
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return "connected"

    def read_file(path):
        with open(path) as handle:
            return handle.read()

    return {
        "np": np, "fork": os.fork, "system": os.system, "remove": os.remove,
        "kill": os.kill, "abort": os.abort, "run": subprocess.run, "connect": connect,
        "open_file": open, "read_file": read_file, "set_handler": signal_module.signal,
        "environ": dict(os.environ),
    }


@pytest.fixture(scope="module")
def plain():
    with Executor(timeout_s=TIMEOUT, memory_mb=256, workers=2,
                  namespace_factory="envs.execution.namespaces:plain_namespace") as ex:
        yield ex.wait_ready()


@pytest.fixture(scope="module")
def small_memory():
    # Memory bombs are slowed by page faults on a loaded machine; a longer
    # timeout keeps them from ending as timeouts instead of memory errors.
    with Executor(timeout_s=5.0, memory_mb=128, workers=1,
                  namespace_factory="envs.execution.namespaces:plain_namespace") as ex:
        yield ex.wait_ready()


@pytest.fixture(scope="module")
def leaky():
    # Secrets in the parent's environment must not reach workers.
    secrets = {"VPRL_TEST_API_KEY": "sekrit", "WANDB_API_KEY": "sekrit", "HF_TOKEN": "sekrit"}
    saved = {k: os.environ.get(k) for k in secrets}
    os.environ.update(secrets)
    try:
        executor = Executor(timeout_s=TIMEOUT, memory_mb=256, workers=1,
                            namespace_factory=f"{__name__}:leaky_namespace")
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key)
            else:
                os.environ[key] = value
    with executor as ex:
        yield ex.wait_ready()


def entry(*lines):
    return "def execute_command(image):\n" + "".join(f"    {line}\n" for line in lines)


def run_one(ex, program):
    start = time.monotonic()
    [result] = ex.run([program], [IMAGE])
    elapsed = time.monotonic() - start
    assert elapsed <= TIMEOUT + 2.0, f"took {elapsed:.1f}s: {result}"
    return result


def assert_pool_healthy(ex):
    """The next batch runs correctly: every worker answers, with fresh state."""
    salt = time.monotonic_ns()  # defeat the result cache
    programs = [entry(f"# {salt} {i}", f"return len([0] * {i}) + int(math.sqrt(16))")
                for i in range(6)]
    results = ex.run(programs, [IMAGE] * len(programs))
    assert [r.status for r in results] == ["ok"] * 6, results
    assert [r.answer for r in results] == [str(i + 4) for i in range(6)]


# ---------------------------------------------------------------- time and memory

@pytest.mark.parametrize("program", [
    entry("while True:", "    pass"),
    entry("return sum(range(10 ** 13))"),  # one C call: SIGALRM cannot interrupt it
    "def spin():\n    while True:\n        pass\n"
    + entry("while True:", "    try:", "        spin()", "    except BaseException:",
            "        pass"),
], ids=["python-loop", "c-loop", "swallows-timeout"])
def test_infinite_loops_time_out(plain, program):
    result = run_one(plain, program)
    assert result.status == "timeout" and result.error.startswith("Error: Timeout")
    assert_pool_healthy(plain)


@pytest.mark.parametrize("program", [
    entry("x = [0] * (10 ** 10)"),
    entry("return np.ones((30000, 30000)).sum()"),
    entry("s = 'ab'", "while True:", "    s = s + s"),
    entry("keep = []", "while True:", "    keep.append(bytearray(10 ** 7))"),
], ids=["list", "numpy", "doubling-string", "accumulate"])
def test_memory_bombs_hit_the_memory_limit(small_memory, program):
    start = time.monotonic()
    [result] = small_memory.run([program], [IMAGE])
    assert time.monotonic() - start <= 5.0 + 2.0
    assert result.status == "memory_limit", result
    assert_pool_healthy(small_memory)


def test_memory_within_budget_is_fine(small_memory):
    [result] = small_memory.run([entry("return len(bytearray(64 * 1024 * 1024))")], [IMAGE])
    assert result.status == "ok" and result.answer == str(64 * 1024 * 1024)


def test_cpu_time_limit_ends_a_busy_program_before_the_wall_clock():
    # The wall-clock limit is far away, so this holds however loaded the machine is.
    with Executor(timeout_s=120.0, cpu_time_s=1.0, workers=1,
                  namespace_factory="envs.execution.namespaces:plain_namespace") as ex:
        ex.wait_ready()
        [result] = ex.run([entry("n = 0", "while True:", "    n += 1")], [IMAGE])
        assert result.status == "timeout" and "CPU time" in result.error


def test_deep_recursion_is_a_runtime_error_and_the_worker_survives(plain):
    restarts = plain.stats["worker_restarts"]
    result = run_one(plain, "def f(n):\n    return f(n + 1)\n" + entry("return f(0)"))
    assert result.status == "runtime_error" and "RecursionError" in result.error
    assert plain.stats["worker_restarts"] == restarts  # answered; nothing had to be killed
    assert_pool_healthy(plain)


# ---------------------------------------------------------------- exits, output, signals

@pytest.mark.parametrize("program,needle", [
    (entry("raise SystemExit(3)"), "SystemExit"),
    (entry("raise KeyboardInterrupt"), "KeyboardInterrupt"),
    (entry("raise GeneratorExit"), "GeneratorExit"),
])
def test_exit_attempts_are_runtime_errors_and_the_worker_survives(plain, program, needle):
    restarts = plain.stats["worker_restarts"]
    result = run_one(plain, program)
    assert result.status == "runtime_error" and needle in result.error
    assert plain.stats["worker_restarts"] == restarts
    assert_pool_healthy(plain)


@pytest.mark.parametrize("program", [
    entry("exit(0)"),
    entry("import sys", "sys.exit(0)"),
    entry("import signal", "signal.signal(14, 1)"),
])
def test_exit_and_signal_modules_are_forbidden(plain, program):
    assert run_one(plain, program).status == "forbidden"


def test_huge_prints_are_captured_and_capped(plain):
    result = run_one(plain, entry("for i in range(200000):", "    print('x' * 100, i)",
                                  "print('y' * 10 ** 7)", "return 'done'"))
    assert result.status == "ok" and result.answer == "done"
    assert result.stdout.startswith("x" * 100 + " 0\n")
    assert len(result.stdout) < 4096 + 100 and "output truncated" in result.stdout
    assert_pool_healthy(plain)


def test_trapping_signals_does_not_stop_the_parents_kill(leaky):
    # SIGALRM (the soft timer) and SIGTERM ignored: only SIGKILL can end it.
    result = run_one(leaky, entry("set_handler(14, 1)", "set_handler(15, 1)", "while True:",
                                  "    pass"))
    assert result.status == "timeout"
    assert_pool_healthy_leaky(leaky)


# ---------------------------------------------------------------- escapes

@pytest.mark.parametrize("program", [
    entry("return ().__class__.__bases__[0].__subclasses__()"),
    entry("return execute_command.__globals__['__builtins__']"),
    entry("return (x for x in []).gi_frame.f_back.f_globals"),
    entry("return '{0.__class__.__base__}'.format(1)"),
    entry("import ctypes", "return ctypes.CDLL(None)"),
    entry("return np.ctypeslib"),
    entry("from numpy import ctypeslib"),
    entry("import dataclasses", "return dataclasses.sys.modules['os']"),
])
def test_static_escapes_are_forbidden(plain, program):
    result = run_one(plain, program)
    assert result.status == "forbidden" and result.error.startswith("Error: ")


@pytest.mark.parametrize("program,needle", [
    (entry("return getattr(image, '__cla' + 'ss__')"), "__class__"),
    (entry("name = ''.join(['__', 'globals', '__'])", "return getattr(execute_command, name)"),
     "__globals__"),
    (entry("import dataclasses", "return getattr(dataclasses, 's' + 'ys')"), "sys"),
    (entry("return getattr(np, 'ctypes' + 'lib')"), "ctypeslib"),
    (entry("return getattr(np, 'f2' + 'py').main"), "f2py"),
    (entry("import typing", "return getattr(typing, 'get_type' + '_hints')"), "get_type_hints"),
    (entry("return __builtins__"), "forbidden"),
])
def test_dynamic_escapes_fail_at_run_time(plain, program, needle):
    result = run_one(plain, program)
    if needle == "forbidden":
        assert result.status == "forbidden"
    else:
        assert result.status == "runtime_error" and needle in result.error, result
    assert_pool_healthy(plain)


# ---------------------------------------------------------------- monkey-patching

def test_rebinding_builtins_does_not_leak_into_the_next_program(plain):
    salt = time.monotonic_ns()
    patched = [f"# {salt} {i}\nlen = lambda x: -1\nabs = None\n" + entry("return len([1, 2])")
               for i in range(4)]
    assert {r.answer for r in plain.run(patched, [IMAGE] * 4)} == {"-1"}
    clean = [f"# {salt} clean {i}\n" + entry("return len([1, 2]) + abs(-1)") for i in range(4)]
    assert {r.answer for r in plain.run(clean, [IMAGE] * 4)} == {"3"}


def test_shared_classes_cannot_be_patched(plain):
    salt = time.monotonic_ns()
    patch = [f"# {salt} {i}\nimport collections\n" + entry(
        "C = collections.Counter", "C.most_common = lambda self, n=None: [('hacked', 1)]",
        "return C('aab').most_common(1)[0][0]") for i in range(4)]
    results = plain.run(patch, [IMAGE] * 4)
    assert {r.status for r in results} == {"runtime_error"}, results
    assert "shared class Counter" in results[0].error
    check = [f"# {salt} check {i}\nimport collections\n" + entry(
        "return collections.Counter('aab').most_common(1)[0][0]") for i in range(4)]
    assert {r.answer for r in plain.run(check, [IMAGE] * 4)} == {"a"}


@pytest.mark.parametrize("program", [
    entry("m = math", "m.pi = 3"),
    entry("n = np", "n.array = None"),
    entry("import math as m", "setattr(m, 'sqrt', None)"),
])
def test_modules_are_read_only(plain, program):
    result = run_one(plain, program)
    assert result.status in ("runtime_error", "forbidden"), result
    sane = run_one(plain, entry("return math.pi > 3.1 and np.array([1]).sum() == 1"))
    assert sane.answer == "yes"


# ---------------------------------------------------------------- kernel layers

def assert_pool_healthy_leaky(ex):
    salt = time.monotonic_ns()
    [result] = ex.run([entry(f"# {salt}", "return int(np.ones(3).sum())")], [IMAGE])
    assert result.status == "ok" and result.answer == "3"


def test_sandbox_layers_are_active_where_the_machine_allows(leaky):
    layers = leaky.sandbox_layers
    assert "rlimits" in layers
    if sys.platform == "linux" and os.geteuid() == 0:
        assert "netns" in layers and "no-capabilities" in layers
    if os.uname().machine == "x86_64":
        assert "seccomp" in layers


def test_statically_forbidden_side_effects(plain, tmp_path):
    target = tmp_path / "created.txt"
    for program in (entry(f"open({str(target)!r}, 'w').write('x')"),
                    entry(f"np.save({str(target)!r}, image)"),
                    entry(f"image.tofile({str(target)!r})"),
                    entry("import os", f"os.system('touch {target}')"),
                    entry("import subprocess", f"subprocess.run(['touch', {str(target)!r}])")):
        assert run_one(plain, program).status == "forbidden"
    assert not target.exists()


def test_process_creation_is_blocked_by_the_kernel(leaky, tmp_path):
    target = tmp_path / "spawned.txt"
    result = run_one(leaky, entry("return fork()"))
    assert result.status == "runtime_error" and "not permitted" in result.error
    result = run_one(leaky, entry(f"return run(['touch', {str(target)!r}])"))
    assert result.status == "runtime_error"
    result = run_one(leaky, entry(f"return system('touch {target}')"))
    assert result.answer != "0"
    assert not target.exists()
    assert_pool_healthy_leaky(leaky)


def test_file_writes_deletes_and_reads_are_blocked_by_the_kernel(leaky, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    created = tmp_path / "new.txt"
    in_repo = os.path.join(os.path.dirname(__file__), "sandbox_write_probe.txt")
    for program in (entry(f"open_file({str(created)!r}, 'w').write('x')"),
                    entry(f"open_file({in_repo!r}, 'w').write('x')"),
                    entry(f"open_file({str(secret)!r}, 'a').write('more')"),
                    entry(f"open_file({str(secret)!r}, 'w')"),
                    entry(f"remove({str(secret)!r})"),
                    entry(f"return read_file({str(secret)!r})"),
                    entry("return read_file('/etc/passwd')")):
        result = run_one(leaky, program)
        assert result.status == "runtime_error", (program, result)
        assert "secret" not in (result.answer or "") and "root:" not in (result.answer or "")
    assert not created.exists() and not os.path.exists(in_repo)
    assert secret.read_text() == "top secret"
    assert_pool_healthy_leaky(leaky)


def test_no_network_even_to_a_loopback_listener(leaky):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    try:
        port = listener.getsockname()[1]
        result = run_one(leaky, entry(f"return connect({port})"))
        assert result.status == "runtime_error" and result.answer is None
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()
    assert_pool_healthy_leaky(leaky)


def test_worker_environment_has_no_secrets(leaky):
    result = run_one(leaky, entry("return sorted(k for k in environ if 'KEY' in k or 'TOKEN' in k)"
                                  " or 'none'"))
    assert result.answer == "none"
    assert run_one(leaky, entry("return 'PATH' in environ")).answer == "yes"


def test_signalling_other_processes_is_blocked(leaky):
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        result = run_one(leaky, entry(f"kill({sleeper.pid}, 9)"))
        assert result.status == "runtime_error" and "not permitted" in result.error
        assert sleeper.poll() is None
        result = run_one(leaky, entry(f"kill({os.getpid()}, 9)"))  # the parent itself
        assert result.status == "runtime_error"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_program_that_kills_its_worker_gets_a_result_and_the_batch_completes(leaky):
    salt = time.monotonic_ns()
    programs = [entry(f"# {salt} {i}", "return 'fine'") for i in range(3)]
    programs.insert(1, entry(f"# {salt}", "abort()"))
    results = leaky.run(programs, [IMAGE] * 4)
    assert [r.status for r in results] == ["ok", "runtime_error", "ok", "ok"]
    assert "crashed the sandbox worker" in results[1].error and "SIGABRT" in results[1].error
    assert_pool_healthy_leaky(leaky)
