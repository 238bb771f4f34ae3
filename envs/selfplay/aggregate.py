"""Mixed-shot aggregation (seed 002, section 4.3.2): one answer from several pools' answers.

Each few-shot pool (one per prompt family) answers a question independently; these
combine their answers:

- `majority`: the most frequent answer after normalisation;
- `judge`: the policy LLM picks one candidate, posed as a multiple-choice question (the
  paper's VLM-Judge; our default policy reads text only, so the prompt carries the
  question and the candidates, not the image);
- `oracle`: the upper bound, the best candidate under the task metric given the gold.

Every aggregator returns an answer (str or None), so the caller scores all of them with
the same metric and compares against the best single pool, as in the paper's Table 4.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Callable, Sequence

from rewards.metrics import answer_key

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _groups(answers: Sequence, key: Callable) -> tuple[list, Counter]:
    """Distinct answers (first spelling seen, in order of first appearance) and their votes."""
    firsts: dict = {}
    votes: Counter = Counter()
    for answer in answers:
        k = key(answer)
        if k is None:
            continue  # a crashed program's None does not vote
        firsts.setdefault(k, answer)
        votes[k] += 1
    return [(k, firsts[k]) for k in firsts], votes


def majority_index(answers: Sequence, key: Callable = answer_key) -> int | None:
    """Index of the first answer in the largest group of equal answers (`answer_key`:
    "Two", "2" and "2.0" are one vote); None when nobody answered.

    Ties go to the group answered first, so a caller listing its pools (or programs)
    best-first falls back to the best single one, the baseline the paper measures
    aggregation against. A crashed program's None does not vote.
    """
    keys = [key(a) for a in answers]
    votes = Counter(k for k in keys if k is not None)
    if not votes:
        return None
    best = max(votes.values())
    return next(i for i, k in enumerate(keys) if k is not None and votes[k] == best)


def majority(answers: Sequence, key: Callable = answer_key):
    """The answer most pools gave (its first spelling); ties go to the earliest pool's
    answer, None if none answered."""
    index = majority_index(answers, key)
    return None if index is None else answers[index]


def judge_prompt(question: str, options: Sequence[str]) -> str:
    """The multiple-choice prompt the judge answers with one letter."""
    lines = [
        "Several programs answered a question about an image. Choose the answer that is most "
        "likely correct.",
        f"Question: {question}",
        "Options:",
    ]
    lines += [f"{LETTERS[i]}. {option}" for i, option in enumerate(options)]
    lines.append("Reply with the letter of the correct option only.")
    lines.append("Answer:")
    return "\n".join(lines)


def parse_choice(reply: str, options: Sequence[str]) -> int | None:
    """Index of the option `reply` picks, or None when it picks none or several.

    Accepts "B", "(B)", "B.", "B) red", "**B**", "Answer: B", "The answer is B", and a
    reply that repeats exactly one option's text. A capital used as a word ("A red one",
    "I think") is not read as a choice.
    """
    n = len(options)
    if not reply or n == 0:
        return None
    valid = LETTERS[:n]
    text = reply.strip().strip("*`'\" ")
    # A letter followed by a lower-case word is English ("A red one"), not a pick; but
    # "A or B" names two letters.
    as_word = r"\s+(?!(?:or|and|vs)\b)[a-z]"
    # 1. The reply starts with the letter: "B", "B.", "(B)", "B) red", "B: red".
    m = re.match(rf"^\(([{valid}])\)|^([{valid}])(?:[\).:,]|\s*$|\s+(?![a-z]))", text)
    if m:
        return valid.index(m.group(1) or m.group(2))
    # 2. Stated: "answer is B", "Answer: (B)", "option C", "I choose D".
    stated = r"(?:answer|option|choice|choose|pick|select)\w*(?:\s*(?:is|was|:))*\s*\(?\**([A-Z])\b"
    for m in re.finditer(stated, text, flags=re.I):
        # Upper case only: after "answer is" a lower-case "a" is the article.
        if m.group(1) in valid:
            return valid.index(m.group(1))
    # 3. The reply repeats an option's text; of nested matches ("red", "dark red") the longest.
    low = text.lower()
    named = [i for i, option in enumerate(options) if str(option).strip() and
             re.search(rf"(?<!\w){re.escape(str(option).strip().lower())}(?!\w)", low)]
    named = [i for i in named if not any(j != i and str(options[i]).strip().lower()
                                         in str(options[j]).strip().lower() for j in named)]
    if len(named) == 1:
        return named[0]
    # 4. Exactly one distinct standalone capital letter among the options' letters.
    letters = {m.group(1) for m in re.finditer(rf"(?<![A-Za-z])([{valid}])(?![A-Za-z])", text)
               if not re.match(as_word, text[m.end():])}
    if len(letters) == 1:
        return valid.index(letters.pop())
    return None


def judge(question: str, answers: Sequence, ask_fn: Callable[[str], str],
          key: Callable = answer_key, return_details: bool = False, rng: random.Random | None = None):
    """The policy picks among the distinct candidate answers; majority when it gives no pick.

    ask_fn(prompt) -> reply text (e.g. greedy generation of a few tokens). With a single
    distinct candidate no question is asked. The options are listed in a shuffled order
    (seeded by the question, or by `rng`): small models favour a position, often "A",
    and unshuffled that position would always hold the first family's answer, so the
    "judge" would quietly be the best single pool. return_details adds a dict with the
    prompt, the reply, the order shown and whether the pick came from the judge or the
    fallback.
    """
    distinct, _ = _groups(answers, key)
    options = [answer for _, answer in distinct]
    details = {"prompt": None, "reply": None, "order": None, "source": "none" if not options else "unanimous"}
    choice = options[0] if options else None
    if len(options) > 1:
        order = list(range(len(options)))
        (rng or random.Random(f"vprl-judge:{question}")).shuffle(order)
        shown = [str(options[i]) for i in order]
        prompt = judge_prompt(question, shown)
        reply = ask_fn(prompt)
        index = parse_choice(reply, shown)
        details.update(prompt=prompt, reply=reply, order=order, source="judge" if index is not None else "fallback")
        choice = options[order[index]] if index is not None else majority(answers, key)
    return (choice, details) if return_details else choice


def _metric_fn(metric):
    if callable(metric):
        return metric
    from rewards.metrics import get_metric

    return get_metric(metric)


def oracle(answers: Sequence, gold, metric="exact_match"):
    """The candidate that scores best against `gold` (first on ties; None if none answered).

    metric: a `rewards.metrics` name or `fn(pred, gold) -> float`; scoring the returned
    answer with the same metric gives the paper's oracle upper bound.
    """
    fn = _metric_fn(metric)
    best, best_score = None, None
    for answer in answers:
        if answer is None:
            continue
        score = fn(answer, gold)
        if best_score is None or score > best_score:
            best, best_score = answer, score
    return best


POOL_AGGREGATORS = ("majority", "judge", "oracle")


def aggregate(method: str, question: str, answers: Sequence, *, ask_fn=None, gold=None,
              metric="exact_match"):
    """Dispatch by name, so a config can list the aggregators to report."""
    if method == "majority":
        return majority(answers)
    if method == "judge":
        if ask_fn is None:
            raise ValueError("aggregate('judge') needs ask_fn= (the policy answering the prompt)")
        return judge(question, answers, ask_fn)
    if method == "oracle":
        if gold is None:
            raise ValueError("aggregate('oracle') needs gold= (the reference answer)")
        return oracle(answers, gold, metric)
    raise ValueError(f"unknown aggregator {method!r}; choose one of {', '.join(POOL_AGGREGATORS)}")
