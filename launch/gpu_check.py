"""launch/gpu_check.sh's runner: every check of tests/gpu/checks.py in a process of its own
(a crash or a hung NCCL call costs one check, not the rest), one line each, within 8
minutes in all. Exit status 0 when nothing failed.

    python launch/gpu_check.py [--budget SECONDS] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def one(name: str, tmp: str) -> int:
    """Run one check here; its verdict is the last line of stdout, as JSON."""
    from tests.gpu import checks

    check = {c.__name__: c for c in checks.CHECKS}[name]
    try:
        line = check(Path(tmp))
        verdict = {"status": "PASSED", "text": line or ""}
    except checks.Skip as e:
        verdict = {"status": "SKIPPED", "text": str(e)}
    except Exception as e:  # AssertionError and anything the check ran into: the reason, in one line
        traceback.print_exc()
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        verdict = {"status": "FAILED", "text": f"{type(e).__name__}: {first}"[:400]}
    print("\n" + json.dumps(verdict), flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=480, help="seconds for all checks (default 480)")
    parser.add_argument("--one", nargs=2, metavar=("NAME", "DIR"), help=argparse.SUPPRESS)
    parser.add_argument("names", nargs="*", help="run only these checks")
    args = parser.parse_args(argv)
    if args.one:
        return one(*args.one)
    from tests.gpu import checks

    names = args.names or [c.__name__ for c in checks.CHECKS]
    start, failed = time.time(), 0
    for name in names:
        left = args.budget - (time.time() - start)
        if left < 15:
            print(f"SKIPPED {name}: the {args.budget:.0f}s budget is spent", flush=True)
            continue
        t0 = time.time()
        with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
            proc = subprocess.Popen([sys.executable, __file__, "--one", name, tmp], cwd=ROOT, text=True,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
            try:
                out, err = proc.communicate(timeout=left)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # the check and whatever it launched
                proc.communicate()
                print(f"TIMEOUT {name} after {time.time() - t0:.0f}s (the budget ran out)", flush=True)
                failed += 1
                continue
        try:
            verdict = json.loads(out.strip().splitlines()[-1])
        except (IndexError, json.JSONDecodeError):
            tail = (err.strip().splitlines() or ["no output"])[-1]
            verdict = {"status": "FAILED", "text": f"the check's process died (exit {proc.returncode}): {tail}"}
        status, text = verdict["status"], verdict["text"]
        failed += status == "FAILED"
        print(f"{status} {name} ({time.time() - t0:.0f}s){': ' + text if text else ''}", flush=True)
        if status == "FAILED":
            print("\n".join(err.strip().splitlines()[-15:]), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
