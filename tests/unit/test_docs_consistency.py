"""The docs name only things that exist (issue 26).

Every file path, command-line flag and config key that README.md, docs/*.md,
bench/README.md and envs/**/README.md name in code (inline spans, fenced and indented
blocks) is checked against the tree: paths against the repository, flags against the
argparse parsers of the command they follow (read from the parsers' source, so nothing
heavy is imported), dotted config keys against the dataclasses in train/config.py. A
renamed flag, key or file that the docs still name fails here, with the doc and the name.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import shlex
import subprocess
import typing
from functools import lru_cache
from pathlib import Path

import pytest

from train.config import Config

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted({ROOT / "README.md", ROOT / "bench" / "README.md", *(ROOT / "docs").glob("*.md"),
               *(ROOT / "envs").rglob("README.md")})
TOP = ("configs", "launch", "train", "envs", "rewards", "policies", "tests", "docs", "bench")

# Names in the docs that are a user's files or a run's outputs, never files of the tree.
NOT_IN_TREE = {
    "my_rewards.py", "my_config.yaml", "program.py", "PROGRAM.py",  # the reader's own files
    "curve.md", "curve.json", "metrics.jsonl", "config.yaml", "tests.jsonl", "report.html",
    "best.json", "train.log", "curve.png",  # what a run, `vprl unit-tests` or bench/learning_curve.py writes
    "image.png",  # the reader's image in the `vprl exec` examples
    "t1.json",  # bench/viunit_table1.py --out
}


def _rel(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


# ---------------------------------------------------------------- code in the docs

def _code(doc: Path) -> tuple[list[str], list[str]]:
    """(inline code spans, lines of code blocks with `\\` continuations joined)."""
    lines, fenced, block, para = [], False, [], []
    prev_blank = True
    for line in doc.read_text().splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            prev_blank = False
            continue
        indented = line.startswith("    ") and (prev_blank or block) and not line.lstrip().startswith(("- ", "|"))
        if fenced or indented:
            block.append(line.strip())
        else:
            block and lines.extend(_join(block))
            block = []
            # a span may wrap onto the next line of its paragraph; a table row is its own paragraph
            para.append("\n" if not line.strip() or line.startswith(("|", "#")) else line)
            line.startswith(("|", "#")) and para.extend([line, "\n"])
        prev_blank = not line.strip()
    lines.extend(_join(block))
    spans = [s.replace("\n", " ") for chunk in " ".join(para).split("\n")
             for s in re.findall(r"`([^`]+)`", chunk)]
    return spans, lines


def _join(block: list[str]) -> list[str]:
    out, cur = [], ""
    for line in block:
        cur += line
        if cur.endswith("\\"):
            cur = cur[:-1] + " "
        else:
            out.append(cur)
            cur = ""
    return out + ([cur] if cur else [])


def _tokens(text: str) -> list[str]:
    try:
        return shlex.split(text, comments=True)
    except ValueError:  # an inline span with half a quoted command
        return text.split()


# ---------------------------------------------------------------- file paths

@lru_cache(maxsize=None)
def _tracked() -> frozenset[str]:
    """The tree's files: git's list, or a walk where there is no git checkout (an sdist)."""
    proc = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if proc.returncode == 0:
        return frozenset(proc.stdout.split())
    return frozenset(str(p.relative_to(ROOT)) for top in TOP if (ROOT / top).is_dir()
                     for p in (ROOT / top).rglob("*") if p.is_file())


def _exists(path: str, doc: Path) -> bool:
    path = path.rstrip("/")
    for base in (ROOT, doc.parent):
        for p in _expand(path):
            if any(True for _ in base.glob(p)) if "*" in p else (base / p).exists():
                return True
    return False


def _expand(path: str) -> list[str]:
    m = re.search(r"\{([^{}]+)\}", path)  # zero{2,3}.json
    if not m:
        return [path]
    return [q for alt in m.group(1).split(",") for q in _expand(path[:m.start()] + alt + path[m.end():])]


PATH = re.compile(r"(?<![\w./$-])((?:%s)/[\w./{},*-]*[\w*}/])" % "|".join(TOP))
BARE = re.compile(r"^[\w-]+\.(?:py|yaml|yml|json|sh|md|toml|png)$")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def _placeholder(path: str) -> bool:
    """configs/X.yaml, runs/<run_name>/, iter_NNN: a pattern the text fills in, not a file."""
    return "<" in path or any(re.fullmatch(r"[A-Z_]+|iter_NNN", Path(c).stem) for c in path.split("/"))


def _paths(doc: Path) -> list[str]:
    spans, lines = _code(doc)
    found = []
    for text in spans + lines:
        found += [p for p in PATH.findall(text) if not _placeholder(p)]
        found += [t for t in text.split() if BARE.match(t) and t not in NOT_IN_TREE and not _placeholder(t)]
    found += [p for p in LINK.findall(doc.read_text()) if "://" not in p]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_every_path_the_docs_name_exists(doc):
    missing = sorted({p for p in _paths(doc) if not _exists(p, doc)
                      and not (BARE.match(p) and any(Path(t).name == p for t in _tracked()))})
    assert not missing, f"{_rel(doc)} names paths that are not in the repository: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_no_doc_points_outside_the_repository(doc):
    text = doc.read_text()
    outside = sorted(set(re.findall(r"(?<![\w.])(/(?:work|tmp|home|root|mnt|scratch)/[\w./-]*)", text)))
    assert not outside, f"{_rel(doc)} names paths on one machine: {outside}"


# ---------------------------------------------------------------- flags

def _flags_of(*files: str) -> frozenset[str]:
    """Option strings of every add_argument call in these sources."""
    names = {"-h", "--help"}
    for file in files:
        for node in ast.walk(ast.parse((ROOT / file).read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "add_argument":
                names |= {a.value for a in node.args if isinstance(a, ast.Constant)
                          and isinstance(a.value, str) and a.value.startswith("-")}
    return frozenset(names)


TRAIN = ("train/setup.py",)
VPRL = {  # `vprl COMMAND` -> the module that parses its arguments (train/cli.py dispatches)
    "train": TRAIN, "report": ("train/report.py",), "exec": ("envs/execution/cli.py",),
    "data shapes": ("envs/data/cli.py",), "data import": ("envs/data/files_cli.py",),
    "data check": ("envs/data/files_cli.py",), "unit-tests": ("rewards/unit_tests/cli.py",),
    "eval": ("train/eval_cli.py",), "export": ("train/export_cli.py",),
}
# Programs whose flags are not ours: whatever follows them is theirs until our next program.
EXTERNAL = {"accelerate", "sbatch", "srun", "pip", "hf", "wandb", "git", "nice", "make", "apt-get",
            "huggingface-cli", "sudo", "export", "cd", "bash", "sh", "OMP_NUM_THREADS=1"}
FOREIGN_FLAGS = {"--no-deps"}  # pip's, named in prose about installing the model wheels


@lru_cache(maxsize=None)
def _all_flags() -> frozenset[str]:
    files = {f for fs in VPRL.values() for f in fs} | {"train/launch.py"}
    files |= {str(p.relative_to(ROOT)) for p in (ROOT / "bench").glob("*.py")}
    return _flags_of(*files)


def _known(flag: str, allowed: frozenset[str]) -> bool:
    # argparse takes a unique prefix of a long option (allow_abbrev), e.g. --val for --validation
    return flag in allowed or sum(a.startswith(flag) for a in allowed) == 1


def _program(tokens: list[str], i: int, start: bool) -> tuple[str | None, int]:
    """The program tokens[i] starts (a key into _parsers()), and how many tokens name it;
    `start`: tokens[i] begins a command (so `hf` is the Hub CLI, not `--backend hf`)."""
    t = tokens[i]
    if t == "vprl":
        rest = tokens[i + 1:i + 3]
        if rest[:1] == ["data"] and len(rest) > 1 and f"data {rest[1]}" in VPRL:
            return f"data {rest[1]}", 3
        if rest and rest[0] in VPRL:
            return rest[0], 2
        return "vprl", 1
    if t.endswith("train/iterate.py") or re.fullmatch(r"(\./)?launch/\w+\.sh", t):
        return "train", 1
    if re.fullmatch(r"(\./)?bench/\w+\.py", t):
        return t.removeprefix("./"), 1
    if t == "-m" and i + 1 < len(tokens) and tokens[i + 1] == "train.launch":
        return "train/launch.py", 2
    if t in EXTERNAL and start:
        return "external", 1
    return None, 0


def _parsers(program: str) -> frozenset[str]:
    if program == "vprl":
        return frozenset({"-h", "--help", "-V", "--version"})
    if program == "train":
        return _flags_of(*TRAIN, "train/launch.py")  # launch/*.sh hand train.launch's and iterate's flags on
    if program in VPRL:
        return _flags_of(*VPRL[program])
    return _flags_of(program)


def _walk(tokens: list[str], flags: list, keys: list, program: str | None = None) -> None:
    """Collect (program, flag) and config keys (with the program they were given to)."""
    i, after_set = 0, False
    while i < len(tokens):
        t = tokens[i]
        if t in ("&&", "||", "|", ";"):
            program, after_set, i = None, False, i + 1
            continue
        start = i == 0 or tokens[i - 1] in ("&&", "||", "|", ";", "python", "python3", "nice", "-n", "5", "19") \
            or re.fullmatch(r"[A-Z_]+=\S*", tokens[i - 1]) is not None
        name, width = _program(tokens, i, start)
        if name:
            program, after_set, i = name, False, i + width
            continue
        if t.startswith("--"):
            flags.append((program, t.split("=", 1)[0]))
            after_set = t == "--set"
            if t == "--arm" and i + 1 < len(tokens):  # "NAME=CONFIG key=value ..."
                keys += [k for k in _tokens(tokens[i + 1])[1:]]
                i += 1
        elif m := re.fullmatch(r"(ARGS)=(.*)", t, re.S):  # make run ARGS="key=value ..."
            keys += _tokens(m.group(2))
        elif re.fullmatch(r"[A-Z_]+=.*\s.*", t, re.S):  # A="--iterations 2 ... --set k=v"
            _walk(_tokens(t.split("=", 1)[1]), flags, keys, program)
        elif after_set or (program == "train" and "=" in t):
            keys.append(t)
        i += 1


def _commands(doc: Path) -> tuple[list, list]:
    flags, keys = [], []
    spans, lines = _code(doc)
    for text in lines + spans:
        _walk(_tokens(text), flags, keys)
    return flags, keys


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_every_flag_the_docs_name_is_parsed_by_its_command(doc):
    flags, _ = _commands(doc)
    bad = []
    for program, flag in flags:
        if program == "external" or flag in FOREIGN_FLAGS or not re.fullmatch(r"--[a-z][\w-]*", flag):
            continue
        allowed = _all_flags() if program is None else _parsers(program)
        if not _known(flag, allowed):
            bad.append(f"{program or 'any command'}: {flag}")
    assert not bad, f"{_rel(doc)} names flags no parser defines: {sorted(set(bad))}"


# ---------------------------------------------------------------- config keys

def _resolve(key: str) -> bool:
    """Is `key` (dotted) a field path of Config? A dict-valued field takes any sub-key."""
    cls = Config
    for part in key.split("."):
        if cls is dict:
            return True
        fields = {f.name: f for f in dataclasses.fields(cls)}
        if part not in fields:
            return False
        hints = typing.get_type_hints(cls)
        hint = hints[part]
        while typing.get_origin(hint) is typing.Annotated:
            hint = typing.get_args(hint)[0]
        cls = hint if dataclasses.is_dataclass(hint) else (dict if hint is dict or typing.get_origin(hint) is dict
                                                           else None)
        if cls is None:
            return part == key.split(".")[-1]
    return True


SECTIONS = tuple(f.name for f in dataclasses.fields(Config) if dataclasses.is_dataclass(f.type)
                 or dataclasses.is_dataclass(typing.get_type_hints(Config)[f.name]))
DOTTED = re.compile(r"^((?:%s)(?:\.\w+)+)(?::|=.*)?$" % "|".join(SECTIONS))
KEY = re.compile(r"^([a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)*)=")


def _config_keys(doc: Path) -> list[str]:
    _, given = _commands(doc)
    keys = [m.group(1) for k in given if (m := KEY.match(k)) and k != "key=value"]  # the syntax itself
    spans, _ = _code(doc)
    for span in spans:  # `optim.lr=-1`, `weighting.transform: threshold`, `data.name=files data.path=...`
        keys += [m.group(1) for t in span.split() if (m := DOTTED.match(t))]
    return keys


def test_the_key_patterns_see_dotted_keys():
    assert SECTIONS and {"optim", "objective", "data", "early_stopping"} <= set(SECTIONS)
    assert _resolve("optim.lr") and _resolve("objective.clip_eps") and _resolve("data.columns.question")
    assert _resolve("eval_questions") and not _resolve("optim.learning_rate") and not _resolve("optim.lr.x")


@pytest.mark.parametrize("doc", DOCS, ids=_rel)
def test_every_config_key_the_docs_name_is_a_field(doc):
    bad = sorted({k for k in _config_keys(doc) if not _resolve(k)})
    assert not bad, f"{_rel(doc)} names config keys train/config.py does not have: {bad}"


# ---------------------------------------------------------------- section names and the CLI

def _headings(readme: Path) -> list[str]:
    return [line.lstrip("#").strip() for line in readme.read_text().splitlines() if line.startswith("#")]


def test_sections_named_in_configs_and_docs_exist():
    refs = []
    for file in [*DOCS, *(ROOT / "configs").glob("*.yaml")]:
        text = file.read_text()
        refs += [(file, ROOT / "README.md", s) for s in re.findall(r'README "([^"]+)"', text)]
        refs += [(file, ROOT / "bench" / "README.md", s)
                 for s in re.findall(r'bench/README(?:\.md)?, section "([^"]+)"', text)]
    assert refs
    bad = [f"{_rel(f)} -> {_rel(r)} \"{s}\"" for f, r, s in refs
           if not any(h.startswith(s) for h in _headings(r))]
    assert not bad, f"sections that do not exist: {bad}"


def test_help_lists_every_registered_answering_strategy(capsys):
    from train.cli import main
    from train.strategies import answer_strategies

    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = out[out.index("(NAME:"):out.index("evaluate a policy")]
    assert len(answer_strategies()) >= 10
    for name in answer_strategies():
        assert f" {name}," in listed or f" {name})" in listed, name
