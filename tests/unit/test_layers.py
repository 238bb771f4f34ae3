"""The import rule of each folder (docs/LAYERS.md), checked on every import statement in
the tree (module-level and the lazy ones inside functions), no import cycle inside the
tools or the sandbox, and the sandbox worker's real start (`workers.sandbox_command`)
must not load gymnasium, rewards or policies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# folder -> the project packages its modules may import (their own folder always).
# Listed most specific first: a file belongs to the first folder that contains it.
RULES = {
    "envs/visprog": ("envs.visprog",),
    "envs/data": ("envs.data", "envs.cliargs"),
    "envs/execution": ("envs.execution",),
    "envs/prompts": ("envs.prompts",),
    "policies": ("policies",),
    "envs/tools/host": ("envs.tools", "envs.data", "policies"),
    "envs/tools": ("envs.tools", "envs.data"),
    "rewards": ("rewards", "envs.execution", "envs.data", "envs.tools", "envs.cliargs", "policies"),
    "envs/selfplay": ("envs.selfplay", "envs.prompts", "rewards", "policies"),
    "envs/environments": ("envs.environments", "envs.data", "envs.execution", "envs.tools", "envs.prompts",
                          "rewards"),
    "train": ("train", "envs", "rewards", "policies"),
}
# Leaf modules import nothing from the project but other leaves, so every layer may use them.
LEAVES = ("policies.programs", "rewards.metrics", "rewards.property_tests.template", "envs.visprog", "envs.cliargs",
          "envs.atomic", "envs.common")
# Entry points may reach further than the layer they sit in, to list what a flag accepts.
EXCEPTIONS = {("envs/execution/cli.py", "envs.tools")}
# Packages whose modules must not import each other in a circle, lazily or not.
ACYCLIC = ("envs/tools", "envs/execution")
PROJECT = ("envs", "rewards", "policies", "train")


def _imports(path: Path):
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module


def _leaf(name: str) -> bool:
    return any(name == leaf or name.startswith(leaf + ".") for leaf in LEAVES)


def _folder(rel: str) -> str | None:
    return next((f for f in RULES if rel.startswith(f + "/")), None)


def test_every_folder_imports_only_what_its_layer_allows():
    bad = []
    for path in sorted(ROOT.glob("*/**/*.py")):
        rel = path.relative_to(ROOT).as_posix()
        folder = _folder(rel)
        if folder is None:
            continue
        for name in _imports(path):
            if name.split(".")[0] not in PROJECT or (rel, name) in EXCEPTIONS or _leaf(name):
                continue
            if not any(name == ok or name.startswith(ok + ".") for ok in RULES[folder]):
                bad.append(f"{rel} imports {name}")
    assert not bad, "imports against docs/LAYERS.md:\n" + "\n".join(bad)


def test_leaves_import_nothing_from_the_project_but_leaves():
    for leaf in LEAVES:
        base = ROOT / leaf.replace(".", "/")
        for path in ([base.with_suffix(".py")] if base.with_suffix(".py").exists() else base.glob("*.py")):
            assert not [n for n in _imports(path) if n.split(".")[0] in PROJECT and not _leaf(n)], path


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _edges(path: Path, known: set[str]):
    """The project modules ``path`` imports, every import statement counted; a relative
    import and ``from pkg import submodule`` name the module they load."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(up + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}"
                elif base in known:
                    yield base


@pytest.mark.parametrize("folder", ACYCLIC)
def test_no_import_cycle_inside(folder):
    paths = sorted((ROOT / folder).rglob("*.py"))
    known = {_module(p) for p in paths}
    graph = {_module(p): set(_edges(p, known)) - {_module(p)} for p in paths}
    # A package's __init__ runs before each of its modules anyway; an edge into it from
    # below is no cycle of ours, so only the edges out of an __init__ count.
    packages = {_module(p) for p in paths if p.name == "__init__.py"}
    graph = {m: {t for t in targets if t not in packages or not m.startswith(t + ".")}
             for m, targets in graph.items()}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m):
        state[m] = 1
        stack.append(m)
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(t):] + [t]))
            if t not in state:
                visit(t)
        stack.pop()
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m)


def test_a_sandbox_worker_imports_nothing_above_the_sandbox():
    from envs.execution.workers import sandbox_command

    command = sandbox_command("envs.execution.worker")
    out = subprocess.run([command[0], "-X", "importtime", *command[1:]], cwd=ROOT, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    loaded = {line.split("|")[-1].strip() for line in out.stderr.splitlines() if line.startswith("import time:")}
    assert "envs.execution.worker" in loaded or "envs.execution" in loaded, out.stderr[-2000:]
    above = sorted(m for m in loaded if m.split(".")[0] in ("gymnasium", "rewards", "policies")
                   or m.startswith("envs.environments"))
    assert not above, f"a worker imported {above}"


@pytest.mark.parametrize("code", ["import envs, gymnasium; assert 'vprl/Shapes-v0' in gymnasium.registry",
                                  "import gymnasium, envs.execution; assert 'vprl/Shapes-v0' in gymnasium.registry"])
def test_import_envs_still_registers_the_ids(code):
    out = subprocess.run([sys.executable, "-s", "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
