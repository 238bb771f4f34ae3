"""Building and caching a question's unit-test suite: ψ → σ → M (ViUniT §3.2).

A suite depends only on the question (and the test-source settings), never on the
program being scored, so it is built once per question, kept in memory and on disk in
the run folder, and reused by every program and every iteration.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

from PIL import Image

from policies import DEFAULT_MODEL
from policies.text_lm import TextLM
from rewards.renamed import renamed
from rewards.unit_tests.coverage import COVERAGE_CRITERIA, COVERAGE_STRATEGIES, coverage_sample
from rewards.unit_tests.types import UnitTest

TEST_SOURCES = ("llm", "scene")
SYNTHESES = ("layout", "diffusers")


@dataclass
class SuiteConfig:
    test_source: str = "llm"        # ψ: "llm" (any question) or "scene" (shapes oracle)
    candidates: int = 20            # M: at most this many candidates reach the sampler
    k: int = 5                      # K: tests per suite
    strategy: str = "answer_then_input"
    criterion: str = "farthest_point"
    synthesis: str = "layout"       # M: "layout" (shapes renderer) or "diffusers"
    layout_llm: bool = True         # an LLM writes layout JSON for captions the rules miss
    with_program: bool = False      # query+implementation prompt (needs programs)
    llm_model: str = DEFAULT_MODEL
    llm_max_new_tokens: int = 192   # D.1 allows 512; ~8 test lines fit, enough for M = 20 from 3 replies
    sequences: int = 3
    diffusion_model: str = ""
    diffusion_kind: str = "sd"
    seed: int = 0

    def __post_init__(self):
        checks = [("test_source", TEST_SOURCES), ("synthesis", SYNTHESES), ("strategy", COVERAGE_STRATEGIES),
                  ("criterion", COVERAGE_CRITERIA)]
        for name, allowed in checks:
            if getattr(self, name) not in allowed:
                raise ValueError(f"unit tests: unknown {name} {getattr(self, name)!r}; "
                                 f"choose one of {', '.join(allowed)}")
        if self.k < 1 or self.candidates < 1:
            raise ValueError("unit tests: k and candidates must be >= 1")
        if self.synthesis == "diffusers" and not self.diffusion_model:
            raise ValueError("unit tests: synthesis 'diffusers' needs diffusion_model (a local pipeline folder)")

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> "SuiteConfig":
        kwargs = renamed(kwargs, "generator", "test_source", "unit tests")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"unit tests: unknown option(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return cls(**kwargs)


@dataclass
class Suite:
    question: str
    tests: list[UnitTest]
    images: list[Image.Image]
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.tests)


def source_of(options: dict) -> str:
    """The test source a reward's options name (read under its old name too)."""
    return renamed(options, "generator", "test_source", "unit tests").get("test_source", "llm")


def suite_key(question: str, spec, cfg: SuiteConfig) -> str:
    settings = asdict(cfg)
    settings["generator"] = settings.pop("test_source")  # its old name: suites cached before stay found
    blob = json.dumps([question, spec, settings], sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def save_suite(suite: Suite, folder: Path) -> None:
    """tests.jsonl plus one PNG per test, written to a temporary folder and renamed, so a
    kill never leaves half a suite that a later run would trust."""
    folder = Path(folder)
    tmp = folder.with_name(folder.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    with open(tmp / "tests.jsonl", "w") as f:
        f.write(json.dumps({"question": suite.question, "stats": suite.stats}) + "\n")
        for i, (t, im) in enumerate(zip(suite.tests, suite.images)):
            name = f"test_{i:02d}.png"
            im.save(tmp / name)
            f.write(json.dumps({**asdict(t), "image": name}) + "\n")
    try:
        os.replace(tmp, folder)
    except OSError:  # another rank or process got there first, with the same content
        shutil.rmtree(tmp, ignore_errors=True)


def load_suite(folder: Path) -> Suite | None:
    path = Path(folder) / "tests.jsonl"
    if not path.exists():
        return None
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    head, rows = lines[0], lines[1:]
    tests, images = [], []
    for r in rows:
        image = r.pop("image")
        tests.append(UnitTest(**r))
        with Image.open(Path(folder) / image) as im:
            images.append(im.convert("RGB"))
    return Suite(head["question"], tests, images, head.get("stats", {}))


class SuiteBuilder:
    """Suites for many questions at once; the LLM and embedder load on first use."""

    def __init__(self, cfg: SuiteConfig | None = None, cache_dir: str | Path | None = None,
                 complete=None, embed=None, synthesizer=None):
        self.cfg = cfg or SuiteConfig()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._complete, self._embed, self._synth = complete, embed, synthesizer
        self._memory: dict[str, Suite] = {}
        self.stats = {"suites_built": 0, "suites_cached": 0, "candidates": 0, "no_layout": 0}

    # ---- lazily loaded parts -------------------------------------------------------
    def complete(self):
        if self._complete is None:
            self._complete = TextLM(self.cfg.llm_model, max_new_tokens=self.cfg.llm_max_new_tokens,
                                    seed=self.cfg.seed)
        return self._complete

    def embed(self, texts):
        if self._embed is None:
            from policies.embed import default_embedder

            self._embed = default_embedder()
        return self._embed(texts)

    def synthesizer(self):
        if self._synth is None:
            if self.cfg.synthesis == "diffusers":
                from rewards.unit_tests.diffusion import DiffusersSynthesizer

                # The LM-guided variant (GLIGEN) asks the unit-test LLM for phrases and boxes.
                layout = self.complete() if self.cfg.diffusion_kind == "gligen" else None
                self._synth = CaptionSynthesizer(DiffusersSynthesizer(self.cfg.diffusion_model,
                                                                      kind=self.cfg.diffusion_kind, layout=layout))
            else:
                self._synth = LayoutSynthesizer(self._layout_llm() if self.cfg.layout_llm else None)
        return self._synth

    def _layout_llm(self):
        from envs.data.layout import LLMLayout

        # D.4.1's layout sampling: temperature 1.0, top_p 0.9, 5 candidates; a layout is
        # one JSON line, so a newline ends it.
        sampler = TextLM(self.cfg.llm_model, temperature=1.0, top_p=0.9, max_new_tokens=160,
                         seed=self.cfg.seed, stop=r"\n")
        return LLMLayout(lambda prompts, n: sampler(prompts, n))

    # ---- building ----------------------------------------------------------------
    def candidates(self, rows: list[dict], programs: list[str] | None = None, progress: bool = False):
        cfg = self.cfg
        if cfg.test_source == "scene":
            from rewards.unit_tests.scene_tests import scene_candidates

            out = []
            for r in rows:
                if not r.get("spec"):
                    raise ValueError("the 'scene' unit-test source needs a shapes 'spec' column; "
                                     "use test_source: llm for other datasets")
                spec = json.loads(r["spec"]) if isinstance(r["spec"], str) else r["spec"]
                out.append(scene_candidates(spec, cfg.candidates, _rng(cfg.seed, r["question"])))
            return out
        from rewards.unit_tests.llm_source import LLMTestSource

        source = LLMTestSource(self.complete(), sequences=cfg.sequences, with_program=cfg.with_program)
        return [c[: cfg.candidates] for c in source([r["question"] for r in rows], programs, progress=progress)]

    def build(self, rows: list[dict], progress: bool = False) -> list[Suite]:
        """One suite per row (rows need "question"; the scene test source also "spec")."""
        keys = [suite_key(r["question"], r.get("spec"), self.cfg) for r in rows]
        todo = {}
        for r, key in zip(rows, keys):
            if key in self._memory or key in todo:
                continue
            cached = load_suite(self.cache_dir / key) if self.cache_dir else None
            if cached is not None:
                self._memory[key] = cached
                self.stats["suites_cached"] += 1
            else:
                todo[key] = r
        if todo:
            pending = list(todo.items())
            all_candidates = self.candidates([r for _, r in pending], progress=progress)
            suites = self.assemble_many([r["question"] for _, r in pending], all_candidates)
            for (key, r), suite in zip(pending, suites):
                self._memory[key] = suite
                self.stats["suites_built"] += 1
                if self.cache_dir:
                    save_suite(suite, self.cache_dir / key)
        return [self._memory[k] for k in keys]

    def assemble_many(self, questions: list[str], candidates: list[list[UnitTest]]) -> list[Suite]:
        """σ then M for many questions. Each question walks its coverage order; a caption
        that yields no image is dropped, counted, and the next-best candidate takes its
        place. Every round synthesises all questions' next captions in one call, so a
        layout LLM sees one batch per round rather than one per question."""
        cfg = self.cfg
        orders = [coverage_sample(c, len(c), self.embed, cfg.strategy, cfg.criterion, rng=_rng(cfg.seed, q))
                  for q, c in zip(questions, candidates)]
        tests: list[list] = [[] for _ in questions]
        images: list[list] = [[] for _ in questions]
        dropped = [0] * len(questions)
        start = [0] * len(questions)
        synth = self.synthesizer()
        while True:
            batch = []  # (question index, test)
            for i, order in enumerate(orders):
                take = order[start[i] : start[i] + cfg.k - len(tests[i])]
                start[i] += len(take)
                batch += [(i, t) for t in take]
            if not batch:
                break
            for (i, t), im in zip(batch, synth([t for _, t in batch], seed=cfg.seed)):
                if im is None:
                    dropped[i] += 1
                else:
                    tests[i].append(t)
                    images[i].append(im)
        self.stats["candidates"] += sum(len(c) for c in candidates)
        self.stats["no_layout"] += sum(dropped)
        return [Suite(q, t, im, {"candidates": len(c), "dropped": d})
                for q, t, im, c, d in zip(questions, tests, images, candidates, dropped)]


def _rng(seed: int, question: str) -> random.Random:
    return random.Random(f"vprl-unit-tests:{seed}:{question}")


class LayoutSynthesizer:
    """M for the shapes world: caption → scene layout → the dataset's own renderer."""

    def __init__(self, llm_layout=None, size: int = 256):
        self.llm_layout, self.size = llm_layout, size

    def __call__(self, tests: list[UnitTest], seed: int = 0) -> list[Image.Image | None]:
        from envs.data.render import render
        from envs.data.scene import Scene
        from envs.data.layout import parse_caption

        scenes = [Scene.from_json(t.scene) if t.scene else parse_caption(t.caption, seed=seed) for t in tests]
        missing = [i for i, s in enumerate(scenes) if s is None]
        if missing and self.llm_layout is not None:
            for i, s in zip(missing, self.llm_layout([tests[i].caption for i in missing])):
                scenes[i] = s
                if s is not None:
                    tests[i].extra["layout"] = "llm"
        for t, s in zip(tests, scenes):  # the test keeps the layout it is drawn from
            if s is not None and t.scene is None:
                t.scene = s.to_json()
                t.extra.setdefault("layout", "rules")
        return [render(s, self.size) if s is not None else None for s in scenes]


class CaptionSynthesizer:
    """Adapts a captions → images model (diffusers) to the tests → images interface."""

    def __init__(self, model):
        self.model = model

    def __call__(self, tests: list[UnitTest], seed: int = 0):
        return self.model([t.caption for t in tests], seed=seed)
