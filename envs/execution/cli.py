"""``vprl exec PROGRAM.py IMAGE.png [--timeout S] [--memory-mb M] [--backend NAME]``

Runs one program on one image in the sandbox and prints the ExecutionResult as
one JSON object. Exit 0 whenever the program was run and judged (whatever its
status); 2 for a usage problem (missing file, unreadable image, bad argument);
1 when the sandbox itself cannot start.
"""
from __future__ import annotations

import argparse
import json
import sys

from envs.cliargs import number

USAGE = ("vprl exec PROGRAM.py IMAGE.png [--timeout S] [--memory-mb M] [--backend NAME] "
         "[--backend-arg KEY=VALUE]")


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, not argparse's usage block
        raise _UsageError(f"{message} (usage: {USAGE})")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="vprl exec", description="Run one visual program on one image in "
                     "the sandbox and print the result as JSON.")
    parser.add_argument("program", help="Python file defining execute_command(image)")
    parser.add_argument("image", help="image file (PNG, JPEG, ...)")
    parser.add_argument("--timeout", type=number(float, above=0), default=5.0, metavar="S",
                        help="wall-clock limit in seconds (default 5)")
    parser.add_argument("--memory-mb", type=number(int, at_least=1), default=1024, metavar="M",
                        help="memory budget in MB on top of the warmed-up worker (default 1024)")
    parser.add_argument("--backend", default="shapes-cv", metavar="NAME",
                        help="vision tools backend (default shapes-cv; hf runs transformers models "
                             "in a tool host)")
    parser.add_argument("--backend-arg", dest="backend_args", action="append", metavar="KEY=VALUE",
                        help="a backend setting, e.g. detector=/models/owlv2 for hf (repeatable)")
    parser.add_argument("--entry", default="execute_command", help=argparse.SUPPRESS)
    return parser


def _fail(message: str, code: int = 2) -> int:
    print(f"vprl exec: error: {message}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except _UsageError as exc:
        return _fail(str(exc))
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    try:
        with open(args.program, encoding="utf-8") as handle:
            program = handle.read()
    except FileNotFoundError:
        return _fail(f"program file not found: {args.program!r}; pass the path of a .py file")
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f"cannot read program {args.program!r} ({exc}); pass a UTF-8 text file")

    from .images import to_array

    try:
        image = to_array(args.image)
    except (OSError, ValueError, TypeError) as exc:
        return _fail(str(exc))
    from envs.cliargs import UsageError, key_values
    from envs.tools import BackendError, open_backend

    from .dispatch import ExecutorError
    from .executor import Executor

    try:  # a model-backed backend (hf) runs in a tool host here; missing models fail now
        tools = open_backend(args.backend, key_values(args.backend_args, "--backend-arg"),
                             setting="--backend-arg {key}=...")
    except (BackendError, UsageError) as exc:
        return _fail(str(exc))
    try:
        with tools, Executor(timeout_s=args.timeout, memory_mb=args.memory_mb, workers=1,
                             backend=tools.spec, cache=False) as executor:
            [result] = executor.run([program], [image], entry=args.entry)
    except ExecutorError as exc:
        return _fail(str(exc).replace("\n", " "), code=1)
    print(json.dumps(result.to_dict()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
