"""Small VQA source files for the data tests of every tier: images as bytes, a raw GQA copy."""

from __future__ import annotations

import io

from datasets import Dataset
from PIL import Image as PILImage

COLORS = ["red", "green", "blue", "yellow", "purple", "orange", "white", "black"]


def image_bytes(i=0, fmt="PNG", size=(8, 6)):
    buf = io.BytesIO()
    PILImage.new("RGB", size, COLORS[i % len(COLORS)]).save(buf, format=fmt)
    return buf.getvalue()


def gqa_fixture(tmp_path, per_type=(12, 3, 1)):
    """Raw GQA questions (imageId + nested groups/types) and an images/ folder of JPEGs."""
    (tmp_path / "images").mkdir()
    rows, types = [], ["typeVerifyC", "stateChoose", "companyVerify"]
    for t, count in enumerate(per_type):
        for k in range(count):
            image_id = f"n{t}{k:03d}"
            (tmp_path / "images" / f"{image_id}.jpg").write_bytes(image_bytes(k, "JPEG"))
            rows.append({"id": f"{t}-{k}", "imageId": image_id, "question": f"Is it {t}?",
                         "answer": "yes" if k % 2 else "no", "fullAnswer": "Yes, it is.",
                         "isBalanced": True,
                         "groups": {"global": None, "local": f"10c-{t}"},
                         "types": {"structural": "verify", "semantic": "attr",
                                   "detailed": types[t]}})
    path = tmp_path / "gqa_questions.parquet"
    Dataset.from_list(rows).to_parquet(str(path))
    return path
