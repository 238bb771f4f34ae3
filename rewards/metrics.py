"""Task metrics, computed the way each benchmark's official evaluation computes them.

Every per-example metric takes the program's answer first and the reference second and
returns a float in [0, 1]. A prediction of ``None`` means the program produced no
answer (it crashed or returned nothing) and scores 0 everywhere; ViperGPT's own
post-processing would turn ``None`` into "no", which would pay crashed programs on
every "no" question.

Sources of the rules:
  * VQA normalisation and soft accuracy: GT-Vision-Lab/VQA, vqaEval.py (master).
  * GQA: ViperGPT datasets/gqa.py (``general_postprocessing`` + the VQA normalisation).
  * Relaxed accuracy: pix2struct ``relaxed_correctness``, the version ChartQA and PlotQA
    results are reported with.
  * ANLS: the Robust Reading Competition script for DocVQA / InfographicVQA.
  * A-OKVQA direct answers: allenai/aokvqa evaluation/eval_predictions.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

# -- VQA answer normalisation -------------------------------------------------------------

# The official table, written as key>value tokens. It includes its oddities on purpose
# (capitalised keys that can never match after lower-casing, "somebody'd" mapping *to*
# "somebodyd"), because matching the leaderboard number matters more than tidiness.
_CONTRACTION_TABLE = """
aint>ain't arent>aren't cant>can't couldve>could've couldnt>couldn't couldn'tve>couldn't've
couldnt've>couldn't've didnt>didn't doesnt>doesn't dont>don't hadnt>hadn't hadnt've>hadn't've
hadn'tve>hadn't've hasnt>hasn't havent>haven't hed>he'd hed've>he'd've he'dve>he'd've hes>he's
howd>how'd howll>how'll hows>how's Id've>I'd've I'dve>I'd've Im>I'm Ive>I've isnt>isn't itd>it'd
itd've>it'd've it'dve>it'd've itll>it'll let's>let's maam>ma'am mightnt>mightn't
mightnt've>mightn't've mightn'tve>mightn't've mightve>might've mustnt>mustn't mustve>must've
neednt>needn't notve>not've oclock>o'clock oughtnt>oughtn't ow's'at>'ow's'at 'ows'at>'ow's'at
'ow'sat>'ow's'at shant>shan't shed've>she'd've she'dve>she'd've she's>she's shouldve>should've
shouldnt>shouldn't shouldnt've>shouldn't've shouldn'tve>shouldn't've somebody'd>somebodyd
somebodyd've>somebody'd've somebody'dve>somebody'd've somebodyll>somebody'll somebodys>somebody's
someoned>someone'd someoned've>someone'd've someone'dve>someone'd've someonell>someone'll
someones>someone's somethingd>something'd somethingd've>something'd've
something'dve>something'd've somethingll>something'll thats>that's thered>there'd
thered've>there'd've there'dve>there'd've therere>there're theres>there's theyd>they'd
theyd've>they'd've they'dve>they'd've theyll>they'll theyre>they're theyve>they've twas>'twas
wasnt>wasn't wed've>we'd've we'dve>we'd've weve>we've werent>weren't whatll>what'll
whatre>what're whats>what's whatve>what've whens>when's whered>where'd wheres>where's
whereve>where've whod>who'd whod've>who'd've who'dve>who'd've wholl>who'll whos>who's
whove>who've whyll>why'll whyre>why're whys>why's wont>won't wouldve>would've
wouldnt>wouldn't wouldnt've>wouldn't've wouldn'tve>wouldn't've yall>y'all yall'll>y'all'll
y'allll>y'all'll yall'd've>y'all'd've y'alld've>y'all'd've y'all'dve>y'all'd've youd>you'd
youd've>you'd've you'dve>you'd've youll>you'll youre>you're youve>you've
"""
CONTRACTIONS: dict[str, str] = dict(tok.split(">") for tok in _CONTRACTION_TABLE.split())

NUMBER_WORDS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4",
    "five": "5", "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}
ARTICLES = frozenset({"a", "an", "the"})
PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-",
               ">", "<", "@", "`", ",", "?", "!")
# The official pattern starts with "(?!<=\d)", a mistyped look-behind that can never fire,
# so in effect a period goes unless a digit follows it ("3.5" keeps its point).
_PERIOD = re.compile(r"\.(?!\d)")
_DIGIT_COMMA_DIGIT = re.compile(r"\d,\d")
# The official call passes re.UNICODE where `count` goes, so at most 32 periods are removed.
_OFFICIAL_PERIOD_LIMIT = 32


def strip_punctuation(text: str) -> str:
    """The VQA punctuation rule (``processPunctuation``)."""
    # A mark is deleted outright when it touches a space or the text holds a number with
    # a thousands comma ("1,000" -> "1000"); otherwise it becomes a space ("ice-cream").
    # Both tests look at the original text, not the partly cleaned one.
    delete = _DIGIT_COMMA_DIGIT.search(text) is not None
    out = text
    for mark in PUNCTUATION:
        touches_space = f"{mark} " in text or f" {mark}" in text
        out = out.replace(mark, "" if delete or touches_space else " ")
    return _PERIOD.sub("", out, count=_OFFICIAL_PERIOD_LIMIT)


def normalize_digits_articles(text: str) -> str:
    """The VQA word rule (``processDigitArticle``): number words, articles, contractions."""
    words = [NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    words = [CONTRACTIONS.get(w, w) for w in words if w not in ARTICLES]
    return " ".join(words)


def normalize_vqa_answer(text: str) -> str:
    """How vqaEval.py cleans a predicted answer before comparing it."""
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return normalize_digits_articles(strip_punctuation(text))


def viper_postprocess(prediction: object) -> str:
    """ViperGPT's ``general_postprocessing`` for a non-None prediction."""
    if isinstance(prediction, bool):
        prediction = "yes" if prediction else "no"
    text = str(prediction).replace("\n", " ").replace("\t", " ").strip().lower()
    return {"true": "yes", "false": "no"}.get(text, text)


# -- per-example metrics ------------------------------------------------------------------

def answer_key(answer) -> str | None:
    """The one form answers are compared in when they vote (majority, judge options):
    VQA normalisation, numbers by value. "Two", "2" and "2.0" are one vote; "True" and
    "yes" too (ViperGPT's post-processing). None (no answer) has no key."""
    if answer is None:
        return None
    text = normalize_vqa_answer(viper_postprocess(str(answer))).strip()
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return text or None
    return repr(int(value)) if value.is_integer() else repr(value)


def exact_match(pred: str | None, gt: str) -> float:
    """ViperGPT's generic accuracy: post-processed prediction equals the reference as given.

    Used for the yes/no image-text matching sets (SugarCREPE, Winoground, NLVR2).
    """
    if pred is None:
        return 0.0
    return float(viper_postprocess(pred) == gt)


def gqa_accuracy(pred: str | None, gt: str) -> float:
    """GQA exact match after ViperGPT's post-processing; the reference is used as given.

    The VQA rules run after the true/false mapping, so "True." stays "true" (as in ViperGPT).
    """
    if pred is None:
        return 0.0
    return float(normalize_vqa_answer(viper_postprocess(pred)) == gt)


def vqa_soft_accuracy(pred: str | None, answers: Sequence[str]) -> float:
    """VQA accuracy: leave-one-out average of min(1, #matching other answers / 3).

    With the usual 10 answers this gives 0, 0.3, 0.6, 0.9 or 1.0 for 0, 1, 2, 3 or 4+
    matching annotators. As in vqaEval.py the references get the punctuation rule only,
    and only when they disagree; they are expected in the annotation files' normal form.

    Fewer than 10 answers: the official formula is used unchanged for 4 or more. With 1 to
    3 answers even unanimous agreement could not reach 1.0 (3 others are needed), so the
    bar drops to the number of other answers; a single answer becomes exact match.
    """
    if not answers:
        raise ValueError("vqa_soft_accuracy needs at least one reference answer")
    if pred is None:
        return 0.0
    resolved = normalize_vqa_answer(pred)
    refs = list(answers)
    if len(set(refs)) > 1:
        refs = [strip_punctuation(a) for a in refs]
    hits = [ref == resolved for ref in refs]
    if len(refs) == 1:
        return float(hits[0])
    needed = min(3, len(refs) - 1)
    total = sum(hits)
    # Sum whole credits first and divide once, so 3 of 10 gives exactly 0.9.
    credit = sum(min(needed, total - hit) for hit in hits)
    return credit / (needed * len(refs))


def aokvqa_accuracy(pred: str | None, answers: Sequence[str]) -> float:
    """A-OKVQA's own direct-answer score: min(1, #exact matches / 3), no normalisation."""
    if not answers:
        raise ValueError("aokvqa_accuracy needs at least one reference answer")
    if pred is None:
        return 0.0
    return min(1.0, sum(pred == a for a in answers) / 3.0)


def _as_float(text: str) -> float | None:
    # A trailing percent sign means hundredths, so "12%" is 0.12 and does not match "12".
    try:
        return float(text.rstrip("%")) / 100.0 if text.endswith("%") else float(text)
    except ValueError:
        return None


def relaxed_accuracy(pred: str | None, target: str | Sequence[str],
                     tolerance: float = 0.05) -> float:
    """ChartQA / PlotQA relaxed accuracy.

    Numbers match within ``tolerance`` relative error (inclusive); anything else, and any
    target equal to 0, needs a case-insensitive exact match. Nothing is stripped, as in the
    official function. A list of targets scores the best of them.
    """
    if pred is None:
        return 0.0
    if not isinstance(target, str):
        if not target:
            raise ValueError("relaxed_accuracy needs at least one target")
        return max(relaxed_accuracy(pred, t, tolerance) for t in target)
    pred, target = str(pred), str(target)
    p, t = _as_float(pred), _as_float(target)
    if p is not None and t:  # t == 0 has no relative error: fall back to string match
        return float(abs(p - t) / abs(t) <= tolerance)
    return float(pred.lower() == target.lower())


def levenshtein(a: str, b: str) -> int:
    """Edit distance with unit costs (insert, delete, substitute)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _anls_form(text: str) -> str:
    return " ".join(text.strip().lower().split())


def anls(pred: str | None, answers: Sequence[str], threshold: float = 0.5) -> float:
    """Average Normalized Levenshtein Similarity for one question (DocVQA, InfographicVQA).

    Strings are lower-cased with whitespace collapsed; NL = distance / longer length;
    the score is 1 - (smallest NL over the answers), or 0 when NL exceeds ``threshold``.
    At NL == threshold the official script keeps the score (it zeroes similarities below
    1 - threshold), although the paper writes NL < threshold; we follow the script.
    The script measures the longer length on the raw strings; we measure it on the
    normalised ones, because raw lengths let a policy pad its answer with spaces to shrink
    NL. Both agree whenever the strings carry no extra whitespace.
    """
    if not answers:
        raise ValueError("anls needs at least one reference answer")
    if pred is None:
        return 0.0
    guess = _anls_form(str(pred))
    distances = []
    for answer in answers:
        ref = _anls_form(answer)
        longest = max(len(ref), len(guess))
        distances.append(levenshtein(ref, guess) / longest if longest else 0.0)
    similarity = 1.0 - min(distances)
    return similarity if similarity >= 1.0 - threshold else 0.0


# -- aggregate metrics --------------------------------------------------------------------

def code_pass_rate(statuses: Iterable[object]) -> float:
    """Fraction of executions whose status is "ok" (seed 002's CPR).

    Accepts status strings or objects with a ``status`` attribute (ExecutionResult).
    """
    values = [getattr(s, "status", s) for s in statuses]
    if not values:
        raise ValueError("code_pass_rate needs at least one execution status")
    return sum(v == "ok" for v in values) / len(values)


# -- registry -----------------------------------------------------------------------------

METRICS: dict[str, Callable[..., float]] = {
    "gqa_accuracy": gqa_accuracy,
    "vqa_soft_accuracy": vqa_soft_accuracy,
    "aokvqa_accuracy": aokvqa_accuracy,
    "relaxed_accuracy": relaxed_accuracy,
    "anls": anls,
    "exact_match": exact_match,
    "code_pass_rate": code_pass_rate,
}

# Which dataset column holds each per-example metric's reference (the second argument).
REFERENCE_COLUMN: dict[str, str] = {
    "gqa_accuracy": "answer",
    "vqa_soft_accuracy": "answers",
    "aokvqa_accuracy": "answers",
    "relaxed_accuracy": "answer",
    "anls": "answers",
    "exact_match": "answer",
}


def get_metric(name: str) -> Callable[..., float]:
    """Look a metric up by name; unknown names fail with the list of known ones."""
    try:
        return METRICS[name]
    except KeyError:
        known = ", ".join(sorted(METRICS))
        raise ValueError(f"unknown metric {name!r}; known metrics: {known}") from None
