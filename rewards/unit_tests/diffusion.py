"""Image synthesis M for visual unit tests (ViUniT §3.2.3, App. D.4): caption -> image.

Three text-to-image models from the paper: SD v1.4 (kind "sd", CompVis/stable-diffusion-v1-4),
SDXL base (kind "sdxl", stabilityai/stable-diffusion-xl-base-1.0) and LM-guided diffusion (kind
"gligen"), where an LLM first lays the caption out as phrases with boxes and a layout-conditioned
GLIGEN pipeline (the paper's longlian/lmd_plus, or a GLIGEN text-box checkpoint) draws them
there. diffusers is an optional extra, imported lazily.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any, Callable

import torch

if TYPE_CHECKING:
    from PIL.Image import Image

# kind -> diffusers pipeline class name
PIPELINES = {
    "sd": "StableDiffusionPipeline",
    "sdxl": "StableDiffusionXLPipeline",
    "gligen": "StableDiffusionGLIGENPipeline",
}

# In-context layout prompt in the spirit of LLM-grounded Diffusion (Lian et al.): boxes are
# corner fractions of the image, which is what the GLIGEN pipeline takes as gligen_boxes.
LAYOUT_PROMPT = """\
Plan the layout of a photograph before it is taken. For the caption, write one line per object \
the caption mentions as `phrase: [x0, y0, x1, y1]`, where x0, y0 is the top-left and x1, y1 the \
bottom-right corner of the object's box, as fractions of the image width and height (0 is the \
left or top edge, 1 the right or bottom edge). Give each instance its own line (three cups are \
three lines), keep the attributes the caption gives in the phrase, place the boxes so the \
caption's spatial relations hold, and end with a `background:` line describing the scene.

Caption: a green pear to the right of a white bowl on a wooden table
Objects:
a white bowl: [0.10, 0.45, 0.50, 0.75]
a green pear: [0.60, 0.35, 0.82, 0.72]
background: a wooden table in a bright kitchen

Caption: two brown horses standing in front of a red barn
Objects:
a red barn: [0.05, 0.05, 0.95, 0.60]
a brown horse: [0.08, 0.40, 0.45, 0.92]
a brown horse: [0.55, 0.42, 0.92, 0.93]
background: a farmyard under a cloudy sky

Caption: a cyclist wearing a yellow helmet riding past a tall streetlight
Objects:
a cyclist wearing a yellow helmet: [0.25, 0.30, 0.62, 0.95]
a tall streetlight: [0.75, 0.02, 0.85, 0.98]
background: a city street at dusk

Caption: a laptop on a desk with a black cat sleeping beside it
Objects:
a laptop: [0.15, 0.40, 0.55, 0.70]
a black cat sleeping: [0.60, 0.50, 0.92, 0.72]
a desk: [0.00, 0.62, 1.00, 1.00]
background: a quiet home office

Caption: {caption}
Objects:
"""

_BRACKETS = re.compile(r"[\[(]([^\[\]()]*)[\])]")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_BULLET = re.compile(r"^(?:[-*•]|\d+[.)])\s+")


def parse_layout(text: str) -> tuple[list[str], list[list[float]]]:
    """`phrase: [x0, y0, x1, y1]` lines -> (phrases, boxes), boxes clamped to [0, 1].

    Lines without a four-number box are skipped, as are empty boxes and the background line;
    parsing stops at the next `Caption:`, where a sampled continuation starts a new example.
    """
    phrases, boxes = [], []
    for line in text.splitlines():
        line = line.strip()
        if line.lower().startswith("caption:"):
            break
        for m in _BRACKETS.finditer(line):
            nums = _NUMBER.findall(m[1])
            if len(nums) == 4:
                break
        else:
            continue
        phrase = _BULLET.sub("", line[: m.start()]).strip().rstrip(":=-").strip().strip("\"'`")
        if not phrase or phrase.lower() == "background":
            continue
        x0, y0, x1, y1 = (min(max(float(v), 0.0), 1.0) for v in nums)
        if x1 <= x0 or y1 <= y0:
            continue
        phrases.append(phrase)
        boxes.append([x0, y0, x1, y1])
    return phrases, boxes


def _import_diffusers():
    try:
        import diffusers
    except ImportError as e:
        raise ImportError("image synthesis for unit tests needs diffusers: pip install 'vprl[diffusion]'") from e
    return diffusers


def _load(model: str, kind: str, dtype: torch.dtype):
    cls = getattr(_import_diffusers(), PIPELINES[kind])
    # local_files_only everywhere: a missing model must fail here, not start a multi-GB download
    if os.path.isdir(model):
        if not os.path.isfile(os.path.join(model, "model_index.json")):
            raise FileNotFoundError(f"{model} holds no diffusers pipeline (no model_index.json); "
                                    f"save one there with pipeline.save_pretrained({model!r})")
        return cls.from_pretrained(model, local_files_only=True, torch_dtype=dtype)
    try:
        return cls.from_pretrained(model, local_files_only=True, torch_dtype=dtype)
    except (OSError, ValueError) as e:  # huggingface_hub takes a missing path for a bad repo id
        raise FileNotFoundError(
            f"diffusion model {model!r} is neither a local folder nor in the Hugging Face cache; "
            f"fetch it where there is network (`hf download {model}`) or pass a local folder") from e


class DiffusersSynthesizer:
    """`synth(captions, seed) -> [PIL image or None]`, one per caption.

    `model` is a diffusers pipeline (or anything called like one) or a folder / cached hub id to
    load offline. A caption comes back None when every try was flagged NSFW or, for kind
    "gligen", when no layout candidate held a box; `stats` counts both.
    """

    def __init__(
        self,
        model: str | Any,
        kind: str = "sd",
        guidance_scale: float = 16.0,
        steps: int = 50,
        prompt_prefix: str = "a photorealistic image of ",
        nsfw_retries: int = 10,
        device: str | None = None,
        dtype: str | torch.dtype = "float32",
        layout: Callable[[list[str], int], list[list[str]]] | None = None,
        layout_candidates: int = 5,
        gligen_beta: float = 0.3,
        height: int | None = None,
        width: int | None = None,
    ):
        if kind not in PIPELINES:
            raise ValueError(f"kind must be one of {sorted(PIPELINES)}, got {kind!r}")
        if kind == "gligen" and layout is None:
            raise ValueError("kind='gligen' needs layout=complete(prompts, n), an LLM sampler that writes the boxes")
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        if isinstance(model, str):
            model = _load(model, kind, dtype).to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        elif device is not None:
            model = model.to(device)
        if hasattr(model, "set_progress_bar_config"):
            model.set_progress_bar_config(disable=True)
        self.pipe, self.kind = model, kind
        self.guidance_scale, self.steps = guidance_scale, steps
        self.prompt_prefix, self.nsfw_retries = prompt_prefix, nsfw_retries
        self.layout, self.layout_candidates, self.gligen_beta = layout, layout_candidates, gligen_beta
        self.height, self.width = height, width
        self.stats = {"images": 0, "nsfw_retries": 0, "dropped": 0, "no_layout": 0}

    def __call__(self, captions: list[str], seed: int = 0) -> list[Image | None]:
        if self.kind == "gligen":
            layouts = self.layouts(captions)
        else:
            layouts = [None] * len(captions)
        out = []
        for caption, lay in zip(captions, layouts):
            if self.kind == "gligen" and lay is None:
                self.stats["no_layout"] += 1
                out.append(None)
            else:
                out.append(self._generate(caption, seed, lay))
        return out

    def layouts(self, captions: list[str]) -> list[tuple[list[str], list[list[float]]] | None]:
        """The first of `layout_candidates` samples per caption that parses to a box, else None."""
        prompts = [LAYOUT_PROMPT.format(caption=c.strip()) for c in captions]
        samples = self.layout(prompts, self.layout_candidates) if prompts else []
        if len(samples) != len(prompts):
            raise ValueError(f"layout sampler returned {len(samples)} candidate lists for {len(prompts)} prompts")
        picked = []
        for candidates in samples:
            parsed = (parse_layout(t) for t in candidates)
            picked.append(next((p for p in parsed if p[0]), None))
        return picked

    def _generate(self, caption: str, seed: int, layout) -> Image | None:
        kwargs = dict(prompt=self.prompt_prefix + caption.strip(), guidance_scale=self.guidance_scale,
                      num_inference_steps=self.steps, height=self.height, width=self.width, output_type="pil")
        if layout is not None:
            kwargs.update(gligen_phrases=layout[0], gligen_boxes=layout[1],
                          gligen_scheduled_sampling_beta=self.gligen_beta)
        for retry in range(self.nsfw_retries + 1):
            if retry:
                self.stats["nsfw_retries"] += 1
            # a CPU generator gives the same latents whatever device the pipeline runs on
            generator = torch.Generator("cpu").manual_seed(seed + retry)
            result = self.pipe(**kwargs, generator=generator)
            flags = getattr(result, "nsfw_content_detected", None)  # SDXL has no safety checker
            if not (flags and flags[0]):
                self.stats["images"] += 1
                return result.images[0]
        self.stats["dropped"] += 1
        return None
