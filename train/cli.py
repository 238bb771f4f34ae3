"""The `vprl` command: `vprl train`, `vprl report`, `vprl exec`, `vprl data shapes|import|check`, `vprl unit-tests`, `vprl eval`, `vprl export`."""

from __future__ import annotations

import os
import sys

USAGE = """usage: vprl [--version] [-h] COMMAND [ARGS]

commands:
  train [--config FILE] [--print-config] [--dry-run] [key=value ...]
                                          reward-weighted policy iteration (same as train/iterate.py);
                                          `vprl train --help` lists every config key
  report RUN [RUN ...] [--out report.html]
                                          one self-contained HTML report of runs (no W&B needed), PNG figures beside it
  exec PROGRAM.py IMAGE.png [--timeout S] [--memory-mb M] [--backend NAME]
                                          run one program in the sandbox, print the result as JSON
  data shapes --out DIR [--train N] [--val N] [--test N] [--seed S]
                                          write the synthetic shapes VQA DatasetDict
  data import SRC --out DIR [--columns question=COL,answer=COL] [--image-root DIR]
                                          convert your VQA files into our DatasetDict
  data check SRC [--columns ...]          load a dataset as training would, print the report
  unit-tests --question Q --out DIR [--k 5 --candidates 20 --test-source llm|scene]
                                          build a question's visual unit tests (ViUniT)
  eval --data DIR [--split validation] [--adapter PATH] --strategy NAME --programs N --unit-tests K
{strategies}
                                          evaluate a policy under an answering strategy (JSON)
  export RUN --out DIR [--merge] [--push-to-hub REPO]
                                          the run's adapter with a model card, or a merged model

Run `vprl COMMAND --help` for a command's options."""

def usage() -> str:
    """USAGE with every registered answering strategy (plug-ins included), wrapped."""
    import textwrap

    from train.strategies import answer_strategies

    pad = " " * 42
    names = textwrap.fill(", ".join(answer_strategies()) + ")", 100, initial_indent=pad + "(NAME: ",
                          subsequent_indent=pad + " " * 7)
    return USAGE.format(strategies=names)


COMMANDS = ("train", "report", "exec", "data", "unit-tests", "eval", "export")


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("vprl")
    except PackageNotFoundError:  # run from a checkout that was never pip-installed
        return "unknown (not installed)"


def _dispatch(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(usage())
        return 0 if argv else 2
    if argv[0] in ("-V", "--version"):
        print(f"vprl {version()}")
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        from train.iterate import main as train_main

        return train_main(rest)
    if command == "report":
        from train.report import main as report_main

        return report_main(rest)
    if command == "exec":
        from envs.execution.cli import main as exec_main

        return exec_main(rest)
    if command == "data":
        if not rest or rest[0] in ("-h", "--help"):
            print("usage: vprl data shapes|import|check ...; see `vprl data COMMAND --help`")
            return 0 if rest else 2
        if rest[0] not in ("shapes", "import", "check"):
            print(f"error: unknown data command {rest[0]!r}; known: shapes, import, check",
                  file=sys.stderr)
            return 2
        if rest[0] == "shapes":
            from envs.data.cli import main as data_main

            return data_main(rest[1:])
        from envs.data.files_cli import main as files_main

        return files_main(rest[1:], command=rest[0])
    if command == "unit-tests":
        from rewards.unit_tests.cli import main as unit_tests_main

        return unit_tests_main(rest)
    if command == "eval":
        from train.eval_cli import main as eval_main

        return eval_main(rest)
    if command == "export":
        from train.export_cli import main as export_main

        return export_main(rest)
    from train.config import did_you_mean

    print(f"error: unknown command {command!r}{did_you_mean(command, COMMANDS)}; "
          "run `vprl --help` for the list", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        try:
            return _dispatch(argv)
        finally:
            sys.stdout.flush()  # a closed pipe shows here (also after argparse's exit), while we can handle it
    except BrokenPipeError:
        # `vprl --help | head`: the reader left. Exit quietly, as Unix tools do, and stop
        # Python from complaining again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell reports for a tool killed by the pipe


if __name__ == "__main__":
    sys.exit(main())
