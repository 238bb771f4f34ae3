"""Writing, checking and caching a question's property tests.

A suite depends only on the question and the test-source settings (never on a program or
a label), so it is written once per question, kept in memory and as one JSON file per
question in the cache folder (the run folder's `property_tests/`), and reused by every
program and every iteration -- as ViUniT's suites are.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from policies import DEFAULT_MODEL
from policies.text_lm import TextLM
from rewards.property_tests.static import parse_test
from rewards.property_tests.types import PropertySuite
from rewards.renamed import renamed

TEST_SOURCES = ("template", "basic", "advanced", "itm")
PROMPT_VERSION = 1  # part of the cache key: a changed prompt must not reuse old tests


@dataclass
class PropertyConfig:
    test_source: str = "template"  # template (rules on the question's form) | basic | advanced | itm (an LLM)
    llm_model: str = DEFAULT_MODEL
    max_new_tokens: int = 256     # the release's budget; tests are written greedily
    seed: int = 0

    def __post_init__(self):
        if self.test_source not in TEST_SOURCES:
            raise ValueError(f"property tests: unknown test_source {self.test_source!r}; "
                             f"choose one of {', '.join(TEST_SOURCES)}")
        if self.max_new_tokens < 16:
            raise ValueError("property tests: max_new_tokens must be >= 16")

    @classmethod
    def from_kwargs(cls, kwargs: dict) -> "PropertyConfig":
        kwargs = renamed(kwargs, "generator", "test_source", "property tests")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - known)
        if unknown:
            raise ValueError(f"property tests: unknown option(s) {', '.join(unknown)}; "
                             f"known: {', '.join(sorted(known))}")
        return cls(**kwargs)

    @property
    def uses_llm(self) -> bool:
        return self.test_source != "template"


def suite_key(question: str, cfg: PropertyConfig) -> str:
    settings = asdict(cfg)
    settings["generator"] = settings.pop("test_source")  # its old name: suites cached before stay found
    settings = settings if cfg.uses_llm else {"generator": cfg.test_source}
    blob = json.dumps([question, settings, PROMPT_VERSION], sort_keys=True)
    return hashlib.sha1(blob.encode()).hexdigest()[:16]


def save_suite(suite: PropertySuite, path: Path) -> None:
    """Written to a temporary file and renamed: a kill never leaves half a suite."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    tmp.write_text(json.dumps(suite.to_dict()))
    os.replace(tmp, path)


def load_suite(path: Path) -> PropertySuite | None:
    """The cached suite, checked again from the generated text: what is cached is the
    (costly) writing, so a change to the static checks applies to old suites too."""
    try:
        data = json.loads(path.read_text())
        # Suites written before the rename name their source "generator".
        return parse_test(data["text"], data["question"], data.get("test_source") or data["generator"])
    except (OSError, ValueError, TypeError, KeyError):
        return None  # missing or unreadable: written again


class PropertySuiteBuilder:
    """Suites for many questions at once. `complete(prompts, n) -> list[list[str]]` is any
    text sampler; the default loads the LLM on first use (greedy, `max_new_tokens`)."""

    def __init__(self, cfg: PropertyConfig | None = None, cache_dir: str | Path | None = None, complete=None):
        self.cfg = cfg or PropertyConfig()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._complete = complete
        self._memory: dict[str, PropertySuite] = {}
        self.stats = {"suites_built": 0, "suites_cached": 0, "tests_kept": 0, "tests_dropped": 0,
                      "test_invalid": 0}

    def complete(self):
        if self._complete is None:
            # Greedy; a line at column 0 ends the function (the policy's own stop rule).
            self._complete = TextLM(self.cfg.llm_model, temperature=0.0, top_p=1.0,
                                    max_new_tokens=self.cfg.max_new_tokens, seed=self.cfg.seed,
                                    stop=r"\n\S")
        return self._complete

    def texts(self, questions: list[str], progress: bool = False) -> list[str]:
        """The `execute_test` text each question's test source writes."""
        if not self.cfg.uses_llm:
            from rewards.property_tests.template import template_test

            return [template_test(q) for q in questions]
        from rewards.property_tests import prompts
        complete = self.complete()
        kwargs = {"progress": progress} if isinstance(complete, TextLM) else {}
        replies = complete([prompts.render(q, self.cfg.test_source) for q in questions], 1, **kwargs)
        # The prompt holds the function's opening; give it back to each reply.
        return [prompts.OPENING + (r[0] if r else "") for r in replies]

    def build(self, questions: list[str], progress: bool = False) -> list[PropertySuite]:
        keys = [suite_key(q, self.cfg) for q in questions]
        todo: dict[str, str] = {}
        for q, key in zip(questions, keys):
            if key in self._memory or key in todo:
                continue
            cached = load_suite(self.cache_dir / f"{key}.json") if self.cache_dir else None
            if cached is not None:
                self._memory[key] = cached
                self.stats["suites_cached"] += 1
            else:
                todo[key] = q
        if todo:
            pending = list(todo.items())
            for (key, q), text in zip(pending, self.texts([q for _, q in pending], progress)):
                suite = parse_test(text, q, self.cfg.test_source)
                self._memory[key] = suite
                self.stats["suites_built"] += 1
                self.stats["tests_kept"] += len(suite)
                self.stats["tests_dropped"] += len(suite.dropped)
                self.stats["test_invalid"] += suite.invalid is not None
                if self.cache_dir:
                    save_suite(suite, self.cache_dir / f"{key}.json")
        return [self._memory[k] for k in keys]
