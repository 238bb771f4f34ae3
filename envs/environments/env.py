"""VisualProgramEnv: a VQA training set as a Gymnasium environment (seed 002).

An episode is one question. The observation is the prompt text (API, in-context shots,
question), the question and a reference to the image; the action is the program text
(a completion that continues the prompt, or a whole `def execute_command(image):`).
The reward is the weighted sum of the configured rewards from the `rewards` registry,
computed by the same TRL-signature functions the trainer and `trl.GRPOTrainer` use.

With `max_turns=1` the episode ends after one program (terminated). With more turns a
program that does not solve the question earns a refinement observation: the prompt now
shows the failed program and what went wrong (its `Error: ...`, a wrong-answer note, or
whatever a `feedback` function says, e.g. unit-test results), and the episode ends when
a program solves it (terminated) or the turns run out (truncated).
"""

from __future__ import annotations

from typing import Any, Callable

import gymnasium as gym
from gymnasium import spaces

from envs.environments.scoring import Outcome, score_rows
from envs.environments.spaces import PrintableText
from envs.prompts import DEFAULT_FAMILY, error_text, get_family, render_refinement

MAX_PROMPT_CHARS = 1 << 17
MAX_PROGRAM_CHARS = 1 << 14
MAX_TEXT_CHARS = 1 << 13


def default_feedback(row: dict, outcome: Outcome) -> str:
    """What a failed attempt is told: the sandbox's error, or that the answer is wrong.

    The gold answer is never revealed: the refinement turn must earn its reward.
    """
    result = outcome.result
    if result.status != "ok":
        return error_text(result)
    if result.answer is None:
        return "Error: the program returned nothing; return the answer as a string"
    return f"Result: the program answered {result.answer!r}, which is wrong"


class VisualProgramEnv(gym.Env):
    """Answer questions about images by writing programs; rewards come from executing them.

    dataset: a `datasets.Dataset` (or a list of row dicts) with at least `question` and
        `image` columns, plus the columns the rewards read (`answer`/`answers`, `metric`...).
    prompt: a prompt family name (`envs.prompts.FAMILIES`).
    rewards: reward names, (name, weight) pairs or {"name", "weight", "kwargs"} dicts;
        default correctness.
    metric: the metric `correctness` uses when rows carry no `metric` column.
    max_turns: 1 for single-step episodes; more for self-refinement.
    feedback: `fn(row, outcome) -> str | None` replacing the default feedback text.
    solved_by, solve_threshold: a turn solves the question when that reward part reaches
        the threshold; with solved_by=None (or correctness not configured), the total.
    order: "random" (rows drawn with the env's seeded generator) or "sequential".
    executor: the `envs.execution.Executor` programs and rewards run on (e.g. one whose
        backend is a tool host's spec); default: the process-wide executor.
    executor_kwargs: settings of that process-wide executor (`envs.execution.shared_executor`).
    backend, backend_kwargs, tool_host: the vision tools (`envs.tools.open_backend`); "hf"
        with model names runs them in a tool host started here, with an executor of the
        env's own (executor_kwargs are its settings); `close()` stops both.

    reset(options={"index": i}) picks row i; options={"shots": [(question, body), ...]}
    replaces the in-context shots from that episode on (the growing few-shot pool).
    The image itself is in info["image"] and `env.image(i)`.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 1}

    def __init__(self, dataset, *, prompt: str = DEFAULT_FAMILY, rewards=None,
                 metric: str | None = None, max_turns: int = 1, shots=None, tokenizer=None,
                 feedback: Callable[[dict, Outcome], str | None] | None = None,
                 solved_by: str | None = "correctness", solve_threshold: float = 1.0,
                 order: str = "random", executor=None, executor_kwargs: dict | None = None,
                 backend: str | None = None, backend_kwargs: dict | None = None,
                 tool_host: str = "auto",
                 render_mode: str | None = None):
        from rewards.combine import RewardSet, reward_specs

        if len(dataset) == 0:
            raise ValueError("the dataset is empty; an environment needs at least one question")
        columns = set(dataset.column_names if hasattr(dataset, "column_names") else dataset[0])
        missing = {"question", "image"} - columns
        if missing:
            raise ValueError(f"dataset has no {', '.join(sorted(missing))} column; it has "
                             f"{', '.join(sorted(columns))}")
        if max_turns < 1:
            raise ValueError(f"max_turns must be at least 1, got {max_turns}")
        if order not in ("random", "sequential"):
            raise ValueError(f"order must be 'random' or 'sequential', got {order!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: use one of "
                             f"{', '.join(self.metadata['render_modes'])}")
        self.family = get_family(prompt)
        if self.family.chat and tokenizer is None:
            raise ValueError(f"prompt family {prompt!r} uses a chat template: pass tokenizer=")
        self.specs = reward_specs(rewards)
        # Unknown reward names fail here, at construction, with the list of known ones.
        self.reward_set = RewardSet(self.specs)
        if "correctness" in self.reward_set.names and not columns & {"answer", "answers"}:
            raise ValueError("the correctness reward needs an answer or answers column; "
                             "this dataset has neither (an unlabelled split?)")
        self.dataset, self.metric, self.max_turns = dataset, metric, int(max_turns)
        self.shots, self.tokenizer, self.feedback_fn = list(shots or []), tokenizer, feedback
        if solved_by is not None and solved_by not in self.reward_set.names:
            if solved_by != "correctness":  # only the default may quietly fall back
                raise ValueError(f"solved_by={solved_by!r} is not among the configured rewards "
                                 f"({', '.join(self.reward_set.names)})")
            solved_by = None
        self.solved_by = solved_by
        self.solve_threshold, self.order = float(solve_threshold), order
        if executor is not None and executor_kwargs:
            raise ValueError("pass executor= or executor_kwargs=, not both")
        self._executor, self.executor_kwargs = executor, dict(executor_kwargs or {})
        self.tools = None
        if backend is not None or backend_kwargs:  # fails here when its models cannot be loaded
            if executor is not None:
                raise ValueError("pass backend= or executor=, not both (an executor has its backend)")
            from envs.execution import Executor
            from envs.tools import open_backend

            self.tools = open_backend(backend or "shapes-cv", backend_kwargs, tool_host=tool_host,
                                      setting="backend_kwargs['{key}']")
            self._executor = Executor(**{**self.executor_kwargs, "backend": self.tools.spec})
        self.render_mode = render_mode

        self.observation_space = spaces.Dict({
            "prompt": PrintableText(MAX_PROMPT_CHARS, min_length=1),
            "question": PrintableText(MAX_TEXT_CHARS),
            "image_index": spaces.Discrete(len(dataset)),
            "turn": spaces.Discrete(self.max_turns + 1),
            "feedback": PrintableText(MAX_TEXT_CHARS),
        })
        self.action_space = PrintableText(MAX_PROGRAM_CHARS)
        self._cursor = 0
        self._index: int | None = None
        self._row: dict | None = None
        self._prompt = ""
        self._feedback = ""
        self._turn = 0
        self._done = True
        self._last: Outcome | None = None

    # ----------------------------------------------------------------- data access
    def __len__(self) -> int:
        return len(self.dataset)

    def row(self, index: int) -> dict:
        """Row `index` as a dict (images decoded)."""
        return dict(self.dataset[int(index)])

    def image(self, index: int):
        return self.row(index)["image"]

    def prompt(self, index: int, shots=None) -> str:
        """The first-turn prompt for row `index`."""
        question = self.row(index)["question"]
        return self.family.render(self.tokenizer, question, self.shots if shots is None else shots)

    def refinement_prompt(self, index: int, program: str, feedback: str, shots=None) -> str:
        """The prompt of a refinement turn after `program` failed with `feedback`."""
        question = self.row(index)["question"]
        return render_refinement(self.family, self.tokenizer, question, program, feedback,
                                 self.shots if shots is None else shots)

    @property
    def executor(self):
        if self._executor is not None:
            return self._executor
        from envs.execution import shared_executor

        # Rewards get this executor handed in (`execute_and_score`), so they read its cache.
        return shared_executor(**self.executor_kwargs)

    # -------------------------------------------------------------------- batched
    def score_batch(self, indices: list[int], completions: list[str],
                    prompts: list[str] | None = None) -> list[Outcome]:
        """Score many completions at once (the trainer's path): programs run in parallel.

        indices[i] is the row completions[i] answers; prompts default to the first-turn
        prompts (pass the refinement prompts for later turns).
        """
        indices = [int(i) for i in indices]
        decoded: dict[int, dict] = {}
        for i in indices:  # a question sampled n times is decoded once
            if i not in decoded:
                decoded[i] = self.row(i)
        rows = [decoded[i] for i in indices]
        if prompts is None:
            firsts = {i: self.family.render(self.tokenizer, r["question"], self.shots)
                      for i, r in decoded.items()}
            prompts = [firsts[i] for i in indices]
        return score_rows(rows, prompts, completions, self.reward_set, self.executor,
                          indices=indices, metric=self.metric,
                          solved_by=self.solved_by, threshold=self.solve_threshold)

    def feedback_for(self, row: dict, outcome: Outcome) -> str:
        text = self.feedback_fn(row, outcome) if self.feedback_fn is not None else None
        return text if text is not None else default_feedback(row, outcome)

    # ---------------------------------------------------------------- gymnasium API
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        if seed is not None:
            self._cursor = 0
        if options.get("shots") is not None:
            self.shots = list(options["shots"])
        if options.get("index") is not None:
            index = int(options["index"])
            if not 0 <= index < len(self.dataset):
                raise IndexError(f"options['index']={index} is outside 0..{len(self.dataset) - 1}")
        elif self.order == "sequential":
            index, self._cursor = self._cursor, (self._cursor + 1) % len(self.dataset)
        else:
            index = int(self.np_random.integers(len(self.dataset)))
        self._index, self._row = index, self.row(index)
        self._prompt = self.family.render(self.tokenizer, self._row["question"], self.shots)
        self._feedback, self._turn, self._done, self._last = "", 0, False, None
        return self._obs(), self._info()

    def step(self, action: str):
        if self._row is None or self._done:
            raise RuntimeError("the episode is over (or never started): call reset() first")
        if not isinstance(action, str):
            raise TypeError(f"the action is the program text (str), got {type(action).__name__}")
        outcome = score_rows([self._row], [self._prompt], [action], self.reward_set,
                             self.executor, indices=[self._index], metric=self.metric,
                             solved_by=self.solved_by, threshold=self.solve_threshold)[0]
        self._turn += 1
        self._last = outcome
        if self.max_turns == 1:
            # A single-step episode ends by design: terminated, never truncated.
            terminated, truncated = True, False
        else:
            terminated = outcome.solved
            truncated = not terminated and self._turn >= self.max_turns
        self._done = terminated or truncated
        self._feedback = "" if outcome.solved else self.feedback_for(self._row, outcome)
        if self._feedback and not self._done:
            self._prompt = render_refinement(self.family, self.tokenizer, self._row["question"],
                                             outcome.program, self._feedback, self.shots)
        reward = 0.0 if outcome.reward is None else float(outcome.reward)
        return self._obs(), reward, terminated, truncated, self._info(outcome)

    def close(self):
        if self.tools is not None:  # the executor and tool host this env started
            self._executor.close()
            self.tools.close()
            self.tools = None
        super().close()

    def render(self):
        if self._row is None or self.render_mode is None:
            return None
        if self.render_mode == "rgb_array":
            from envs.execution.images import to_array

            return to_array(self._row["image"]).copy()
        lines = [f"[{self._row.get('id', self._index)}] {self._row['question']}"]
        if self._last is not None:
            r = self._last.result
            lines += [self._last.program.rstrip(),
                      f"-> {r.status}: {r.answer if r.ok else r.error}",
                      f"reward {self._last.reward} parts {self._last.parts}"]
        return "\n".join(lines) + "\n"

    # ------------------------------------------------------------------ helpers
    def _obs(self) -> dict:
        if len(self._prompt) > MAX_PROMPT_CHARS:
            raise ValueError(f"the prompt has {len(self._prompt)} characters, more than the "
                             f"observation space's {MAX_PROMPT_CHARS}; use fewer shots")
        return {"prompt": self._prompt, "question": self._row["question"][:MAX_TEXT_CHARS],
                "image_index": int(self._index), "turn": self._turn,
                "feedback": self._feedback[:MAX_TEXT_CHARS]}

    def _info(self, outcome: Outcome | None = None) -> dict:
        info = {"index": int(self._index), "id": self._row.get("id"), "turn": self._turn,
                "image": self._row["image"]}
        if outcome is not None:
            info.update(outcome.info(), feedback=self._feedback)
        return info
