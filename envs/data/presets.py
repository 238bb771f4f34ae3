"""What we know about the published VQA and image-text matching datasets.

A preset says where each of our fields lives in a dataset as published (several candidate
column names, because the official releases and the Hub copies differ) and which metric
scores it. Next to the presets: how those schemas spell answers and labels, and how the
papers subsample the datasets. ``envs.data.hf.load_vqa`` does the loading.

Image-text matching sets (SugarCREPE, Winoground, NLVR2) become yes/no questions in the
form ViUniT uses for Winoground: ``Verify image matches text="<caption>"``.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Column names to try when no preset is given.
DEFAULT_FIELDS: dict[str, tuple[str, ...]] = {
    "question": ("question", "query", "question_string", "sentence"),
    "answer": ("answer", "multiple_choice_answer", "label"),
    "answers": ("answers", "direct_answers"),
    "image": ("image", "img", "image_path", "file_name"),
    "id": ("id", "question_id", "questionId"),
    "group": ("group",),
}
ITM_QUESTION = 'Verify image matches text="{}"'


@dataclass(frozen=True)
class Preset:
    """How to read one published dataset."""

    name: str
    metric: str                                  # a name in rewards.metrics.METRICS
    fields: Mapping[str, tuple[str, ...]]        # our field -> candidate source columns
    required: tuple[str, ...] = ("question", "image")
    extras: tuple[str, ...] = ()                 # source columns copied through when present
    expand: Callable[[Mapping[str, Any]], list[dict]] | None = None
    image_file: str | None = None                # file name for bare image ids under image_root
    paper_subsample: Mapping[str, int] | None = None
    hub: str | None = None                       # a Hub copy with this schema
    hub_config: str | None = None
    notes: str = ""


def _is_blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def _itm_question(caption: Any) -> str | None:
    # A blank caption must surface as an empty question, not as `text=""`.
    return None if _is_blank(caption) else ITM_QUESTION.format(str(caption).strip())


def to_text(value: Any) -> str | None:
    """An answer as text; PlotQA stores numbers, so 3.0 becomes "3"."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def answer_list(value: Any) -> list[str]:
    """Reference answers as a list of strings, whichever way the schema stores them."""
    # Strings, structs with an "answer" key (VQAv2 and OK-VQA on the Hub), or such
    # structs stored column-wise: {"answer": [...], "answer_id": [...]}.
    if isinstance(value, dict):
        value = value.get("answer")
    items = value if isinstance(value, list) else [value]
    items = [v.get("answer") if isinstance(v, dict) else v for v in items]
    return [t for t in map(to_text, items) if t is not None]


def majority_answer(answers: Sequence[str]) -> str | None:
    """The most frequent answer, ties going to the first listed (our ``answer`` column)."""
    counts = {a: answers.count(a) for a in answers}
    return max(answers, key=lambda a: (counts[a], -answers.index(a))) if answers else None


def yes_no(label: Any) -> str | None:
    """Map the label spellings of NLVR2 copies (True, "true", 1, "yes") to yes/no."""
    text = str(label).strip().lower()
    if text in {"true", "1", "yes"}:
        return "yes"
    if text in {"false", "0", "no"}:
        return "no"
    return None


def _sugarcrepe_rows(v: Mapping[str, Any]) -> list[dict]:
    # Each item pairs one image with a true caption and a hard negative: two questions.
    return [
        {"id": f"{v['id']}:pos", "question": _itm_question(v["caption"]), "answer": "yes",
         "images": [v["image"]], "group": v.get("group")},
        {"id": f"{v['id']}:neg", "question": _itm_question(v["negative_caption"]),
         "answer": "no", "images": [v["image"]], "group": v.get("group")},
    ]


def _winoground_rows(v: Mapping[str, Any]) -> list[dict]:
    # All four image/caption pairings, as ViUniT evaluates it (400 items -> 1600 questions).
    rows = []
    for i in (0, 1):
        for c in (0, 1):
            rows.append({"id": f"{v['id']}:i{i}c{c}", "question": _itm_question(v[f"caption_{c}"]),
                         "answer": "yes" if i == c else "no", "images": [v[f"image_{i}"]],
                         "group": v.get("group")})
    return rows


def _nlvr2_rows(v: Mapping[str, Any]) -> list[dict]:
    # The sentence talks about a left and a right image; the loader puts them side by side.
    images = v.get("images") or [v.get("left"), v.get("right")]
    return [{"id": str(v["id"]), "question": _itm_question(v["question"]),
             "answer": yes_no(v["label"]), "images": list(images), "group": v.get("group")}]


_ID = ("id", "question_id", "questionId")

PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset(
        "gqa", "gqa_accuracy",
        # Khan et al. and ViUniT sample per question type: the `types.detailed` field
        # (typeVerifyC, stateChoose, ...), 102-105 groups in the balanced splits.
        {"question": ("question",), "answer": ("answer",), "id": _ID,
         "image": ("image", "imageId", "image_id"),
         "group": ("types.detailed", "group", "groups.global")},
        extras=("fullAnswer",), image_file="{}.jpg",
        paper_subsample={"per_group": 10}, hub="lmms-lab/GQA",
        hub_config="train_balanced_instructions",
        notes="ViUniT: 10 per group from balanced-train, 5 per group from balanced-val. "
              "The Hub copy keeps images in a separate config; use image_root for a local "
              "images/ folder named <imageId>.jpg.",
    ),
    Preset(
        "vqav2", "vqa_soft_accuracy",
        {"question": ("question",), "answer": ("multiple_choice_answer", "answer"),
         "answers": ("answers",), "image": ("image",), "id": _ID,
         "group": ("multiple_choice_answer", "answer")},
        extras=("question_type", "answer_type"),
        # ViUniT: 10 questions for each of the 50 most common answers.
        paper_subsample={"per_group": 10, "top_groups": 50}, hub="HuggingFaceM4/VQAv2",
    ),
    Preset(
        "okvqa", "vqa_soft_accuracy",
        {"question": ("question",), "answers": ("answers",), "image": ("image",), "id": _ID,
         "group": ("question_type",)},
        extras=("answer_type",), paper_subsample={"per_group": 10}, hub="lmms-lab/OK-VQA",
        notes="ViUniT: 10 questions per question type.",
    ),
    Preset(
        "aokvqa", "vqa_soft_accuracy",
        {"question": ("question",), "answers": ("direct_answers",), "image": ("image",),
         "id": _ID, "group": ("group",)},
        extras=("choices", "correct_choice_idx", "difficult_direct_answer", "rationales"),
        hub="HuggingFaceM4/A-OKVQA",
        notes="A-OKVQA's own script scores direct answers without leave-one-out; pass "
              "metric='aokvqa_accuracy' to use it.",
    ),
    Preset(
        "chartqa", "relaxed_accuracy",
        {"question": ("query", "question"), "answer": ("label", "answer"),
         "image": ("image", "imgname"), "id": ("id",),
         "group": ("human_or_machine", "type")},
        hub="HuggingFaceM4/ChartQA",
    ),
    Preset(
        "plotqa", "relaxed_accuracy",
        {"question": ("question_string", "question"), "answer": ("answer",),
         "image": ("image", "image_index"), "id": _ID, "group": ("template", "type")},
        image_file="{}.png", notes="PlotQA v2 qa_pairs schema; images are <image_index>.png.",
    ),
    Preset(
        "docvqa", "anls",
        {"question": ("question",), "answers": ("answers",), "image": ("image",),
         "id": ("questionId",) + _ID, "group": ("question_types",)},
        extras=("docId", "ucsf_document_id", "ucsf_document_page_no"),
        hub="lmms-lab/DocVQA", hub_config="DocVQA",
    ),
    Preset(
        "infovqa", "anls",
        {"question": ("question",), "answers": ("answers",), "image": ("image",),
         "id": ("questionId",) + _ID, "group": ("answer_type",)},
        extras=("operation/reasoning", "evidence"),
        hub="lmms-lab/DocVQA", hub_config="InfographicVQA",
    ),
    Preset(
        "sugarcrepe", "exact_match",
        {"image": ("image", "filename"), "caption": ("caption",),
         "negative_caption": ("negative_caption",), "id": ("id",),
         "group": ("category", "type", "group")},
        required=("image", "caption", "negative_caption"), expand=_sugarcrepe_rows,
        notes="One positive and one negative question per item. ViUniT trains on ~10% "
              "balanced over the 7 categories: subsample={'total': N} with a category column.",
    ),
    Preset(
        "winoground", "exact_match",
        {"image_0": ("image_0",), "image_1": ("image_1",), "caption_0": ("caption_0",),
         "caption_1": ("caption_1",), "id": ("id",), "group": ("tag", "collapsed_tag")},
        required=("image_0", "image_1", "caption_0", "caption_1"), expand=_winoground_rows,
        extras=("secondary_tag", "num_main_preds"), hub="facebook/winoground",
    ),
    Preset(
        "nlvr2", "exact_match",
        {"question": ("sentence",), "label": ("label",), "images": ("images",),
         "left": ("left_image", "left_url", "image_0"),
         "right": ("right_image", "right_url", "image_1"), "id": ("identifier",) + _ID,
         "group": ("group",)},
        required=("question", "label"), expand=_nlvr2_rows, hub="HuggingFaceM4/NLVR2",
        notes="The left and right images are placed side by side in one image.",
    ),
]}


def get_preset(name: str) -> Preset:
    """Look a preset up by name; unknown names fail with the list of known ones."""
    try:
        return PRESETS[name.lower()]
    except KeyError:
        raise ValueError(f"unknown dataset preset {name!r}; known presets: "
                         f"{', '.join(sorted(PRESETS))}") from None


# -- subsampling as in the papers ---------------------------------------------------------

SUBSAMPLE_KEYS = ("per_group", "top_groups", "total")


def subsample_spec(subsample: int | str | Mapping[str, int] | None,
                   preset: Preset | None = None) -> dict[str, int] | None:
    """Normalise ``load_vqa``'s ``subsample`` argument: an int, "paper" or a dict."""
    if subsample is None:
        return None
    if subsample == "paper":
        if not (preset and preset.paper_subsample):
            with_rule = ", ".join(n for n, p in PRESETS.items() if p.paper_subsample)
            raise ValueError(f"subsample='paper' needs a preset with a published sampling "
                             f"({with_rule}); pass {{'per_group': k}} instead")
        return dict(preset.paper_subsample)
    if isinstance(subsample, int) and not isinstance(subsample, bool):
        return {"total": subsample}
    if not isinstance(subsample, Mapping) or not set(subsample) <= set(SUBSAMPLE_KEYS):
        raise ValueError(f"subsample must be an int, 'paper' or a dict with keys {SUBSAMPLE_KEYS}")
    return dict(subsample)


def select_subsample(n: int, groups: Sequence[str | None] | None,
                     spec: Mapping[str, int] | None, seed: int = 0) -> list[int]:
    """Indices of the subsample of ``n`` rows, in source order.

    ``per_group`` takes k random rows from every group (all of a smaller group, as ViUniT
    does for GQA's small types); ``top_groups`` first keeps the most frequent groups
    (ViUniT's 50 most common VQAv2 answers); ``total`` then draws round-robin over the
    groups, so the sample stays balanced across them (SugarCREPE's 10% over 7 types).
    """
    if not spec:
        return list(range(n))
    if groups is None:
        if "per_group" in spec or "top_groups" in spec:
            raise ValueError("subsampling per group needs a group column; "
                             "pass columns={'group': '<column>'}")
        groups = [None] * n
    rng = random.Random(seed)
    members = defaultdict(list)
    for i, g in enumerate(groups):
        members[g].append(i)
    names = sorted(members, key=lambda g: (-len(members[g]), str(g)))[:spec.get("top_groups")]
    buckets = []
    for g in sorted(names, key=str):
        rows = members[g][:]
        rng.shuffle(rows)
        buckets.append(rows[:spec.get("per_group")])
    if spec.get("total") is None:
        return sorted(i for bucket in buckets for i in bucket)
    rng.shuffle(buckets)  # which groups give the extra row when total does not divide evenly
    chosen: list[int] = []
    while len(chosen) < spec["total"] and any(buckets):
        for bucket in buckets:
            if bucket and len(chosen) < spec["total"]:
                chosen.append(bucket.pop())
    return sorted(chosen)
