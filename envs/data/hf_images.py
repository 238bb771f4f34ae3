"""Images for the real-dataset loader: pointers in the first pass, reading in the second.

The first pass over a source must not copy every image: rows carry a ``POINTER`` to the
source row and column that embed the bytes, or to a local file. The second pass reads
only the chosen images, checks that they decode, and writes them into the result.
"""

from __future__ import annotations

import io
from pathlib import Path

import datasets
from datasets import Value
from PIL import Image as PILImage

POINTER = {"row": Value("int64"), "column": Value("string"), "item": Value("int32"),
           "path": Value("string")}


def point(value, row: int, column: str, item: int = -1):
    """Swap embedded image bytes for a pointer into the source; leave other values alone."""
    if isinstance(value, list):
        return [point(v, row, column, k) for k, v in enumerate(value)]
    embedded = isinstance(value, (bytes, bytearray)) or (isinstance(value, dict)
                                                        and bool(value.get("bytes")))
    return {"row": row, "column": column, "item": item, "path": None} if embedded else value


def image_ref(value, image_root: Path | None = None, image_file: str | None = None):
    """A pointer for one image value, or None when there is no usable image.

    Values are pointers made by ``point``, ``datasets`` path records, file names, bare
    image ids (named by ``image_file``, e.g. GQA's "{}.jpg") or URLs. A URL is never
    fetched: its file name is looked up under ``image_root``.
    """
    if isinstance(value, dict):
        if "row" in value:
            return value
        value = value.get("path")
    if value is None or value == "":  # an image id may be 0
        return None
    name = str(value)
    if name.startswith(("http://", "https://")):
        name = name.rsplit("/", 1)[-1]
    elif image_file and not Path(name).suffix:
        name = image_file.format(name)
    given = Path(name).expanduser()
    rooted = image_root / given if image_root and not given.is_absolute() else given
    path = rooted if rooted.is_file() else given  # else relative to the working folder
    return {"row": -1, "column": "", "item": -1, "path": str(path)} if path.is_file() else None


class ImageReader:
    """Second pass (a batched ``Dataset.map``): read and decode the chosen images.

    A row whose image does not decode is marked ``unreadable_image`` in ``_skip``; a row
    with several images (NLVR2's pair) gets them side by side in one picture.
    """

    def __init__(self, source: datasets.Dataset):
        self.source = source

    def __call__(self, batch):
        images, skips = [], []
        for refs, skip in zip(batch["images"], batch["_skip"]):
            try:
                opened = [self._open(ref) for ref in refs]
            except Exception as err:  # whatever the decoder raises, the file is unusable
                images.append(None)
                skips.append(f"unreadable_image: {type(err).__name__}: {err}"[:200])
                continue
            # One image keeps its original encoding rather than re-encoding decoded pixels.
            images.append({"bytes": opened[0][0], "path": refs[0]["path"]} if len(opened) == 1
                          else side_by_side([pil for _, pil in opened]))
            skips.append(skip)
        return {"image": images, "_skip": skips}

    def _open(self, ref) -> tuple[bytes, PILImage.Image]:
        if ref["path"]:
            data = Path(ref["path"]).read_bytes()
        else:
            value = self.source[ref["row"]][ref["column"]]
            value = value[ref["item"]] if ref["item"] >= 0 else value
            data = value["bytes"] if isinstance(value, dict) else bytes(value)
        pil = PILImage.open(io.BytesIO(data))
        pil.load()
        return data, pil


def side_by_side(images: list[PILImage.Image], gap: int = 8) -> PILImage.Image:
    """Several images as one picture, left to right and top-aligned (NLVR2's pair)."""
    offsets = [sum(im.width + gap for im in images[:k]) for k in range(len(images))]
    canvas = PILImage.new("RGB", (offsets[-1] + images[-1].width,
                                  max(im.height for im in images)), "white")
    for im, x in zip(images, offsets):
        canvas.paste(im.convert("RGB"), (x, 0))
    return canvas
