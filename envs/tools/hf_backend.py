"""``hf``: transformers models as vision tools, for real images.

- find / exists: a zero-shot detector of the OWL family (OWLv2, OWL-ViT);
- simple_query / answer / describe: a BLIP-2 or other image-text-to-text model;
- verify_property / best_image_match / best_text_match: CLIP or SigLIP.

Each model is named in the config (backend kwargs), loaded on first use from a local
directory or the local Hugging Face cache (nothing is downloaded unless
``local_files_only=False``), and every method has a ``batch_*`` form that the tool host
uses to answer many workers' requests with one forward pass.  Heavy models belong in the
tool host: building this backend inside a sandbox worker is refused.

Boxes come out of the detector as normalised (cx, cy, w, h) with the origin at the top
left; ``to_bottom_left`` turns them into the ImagePatch convention (left, lower, right,
upper) in pixels, origin at the bottom left.
"""
from __future__ import annotations

import os

import sys
from pathlib import Path

import numpy as np

from envs.tools.backend import Backend, BackendError, View

DEFAULTS = {"detector": "google/owlv2-base-patch16-ensemble",
            "vqa": "Salesforce/blip2-flan-t5-xl", "clip": "openai/clip-vit-base-patch32"}
# What goes without each model when its setting is null.
TOOLS = {"detector": "find and exists", "vqa": "simple_query, answer and describe",
         "clip": "verify_property, best_text_match and best_image_match"}
DETECTORS = ("owlv2", "owlvit")


def to_bottom_left(boxes, height: int, width: int, square_padded: bool = True) -> list:
    """Normalised (cx, cy, w, h), origin top-left -> integer (left, lower, right, upper),
    origin bottom-left, clipped to the image; empty boxes are dropped.

    OWLv2 pads every image to a square (at the bottom and right) before predicting, so its
    boxes are fractions of max(height, width); pass ``square_padded=False`` for detectors
    whose boxes are fractions of the image itself."""
    sx, sy = (max(height, width),) * 2 if square_padded else (width, height)
    out = []
    for cx, cy, w, h in np.asarray(boxes, dtype=np.float64).reshape(-1, 4):
        x0, x1 = np.clip([(cx - w / 2) * sx, (cx + w / 2) * sx], 0, width)
        top, bottom = np.clip([(cy - h / 2) * sy, (cy + h / 2) * sy], 0, height)
        box = (int(round(x0)), int(round(height - bottom)), int(round(x1)),
               int(round(height - top)))
        if box[2] > box[0] and box[3] > box[1]:
            out.append(box)
    return out


def nms(boxes: list, scores, iou: float) -> list:
    """Indices kept by greedy non-maximum suppression, best score first."""
    order, keep = list(np.argsort(-np.asarray(scores))), []
    b = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    for i in order:
        ix = np.minimum(b[i, 2], b[keep, 2]) - np.maximum(b[i, 0], b[keep, 0])
        iy = np.minimum(b[i, 3], b[keep, 3]) - np.maximum(b[i, 1], b[keep, 1])
        inter = np.clip(ix, 0, None) * np.clip(iy, 0, None)
        if not keep or (inter / (area[i] + area[keep] - inter)).max() <= iou:
            keep.append(int(i))
    return keep


def _in_sandbox_worker() -> bool:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return getattr(spec, "name", None) == "envs.execution.worker"


def make_hf_backend(**kwargs) -> "HFBackend":
    if _in_sandbox_worker():
        raise RuntimeError(
            "the hf backend runs in a tool host, not inside sandbox workers: start "
            "envs.tools.host.ToolHost('hf', {...model names...}) and pass "
            "Executor(backend=host.spec)")
    return HFBackend(**kwargs)


class Component:
    """A model with its input processing: ``image_processor`` and ``tokenizer``, or one
    ``processor`` taking both (image-text-to-text models insert image tokens themselves)."""

    def __init__(self, model, image_processor=None, tokenizer=None, processor=None):
        self.model, self.processor = model, processor
        self.image_processor = image_processor or getattr(processor, "image_processor", None)
        self.tokenizer = tokenizer or getattr(processor, "tokenizer", None)


class HFBackend(Backend):
    """Model names (or ready ``Component``s) for ``detector``, ``vqa`` and ``clip``.

    device: "cuda", "cpu", ...; default cuda when available.  dtype: "float32",
    "bfloat16", "float16" or "auto" (half precision on GPU, float32 on CPU)."""

    name = "hf"

    def __init__(self, detector=DEFAULTS["detector"], vqa=DEFAULTS["vqa"],
                 clip=DEFAULTS["clip"], device: str | None = None, dtype: str = "auto",
                 box_threshold: float = 0.1, nms_iou: float = 0.5, max_boxes: int = 20,
                 property_threshold: float = 0.5, vqa_prompt: str = "Question: {question} Answer:",
                 max_new_tokens: int = 10, local_files_only: bool = True):
        import torch

        self.torch = torch
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if device == "cuda" and os.environ.get("LOCAL_RANK"):
            # Under a multi-GPU launch every rank opens its own tools: each on its own GPU,
            # not all on cuda:0 beside rank 0's policy.
            device = f"cuda:{int(os.environ['LOCAL_RANK'])}"
        self.device = torch.device(device)
        if dtype == "auto":
            dtype = "float32" if self.device.type == "cpu" else "bfloat16"
        if dtype not in ("float32", "bfloat16", "float16"):
            raise ValueError(f"dtype {dtype!r}: use float32, bfloat16, float16 or auto")
        self.dtype = getattr(torch, dtype)
        self.specs = {"detector": detector, "vqa": vqa, "clip": clip}
        self.loaded: dict = {}
        self.box_threshold, self.nms_iou, self.max_boxes = box_threshold, nms_iou, max_boxes
        self.property_threshold = property_threshold
        self.vqa_prompt, self.max_new_tokens = vqa_prompt, max_new_tokens
        self.local_files_only = local_files_only

    @property
    def cache_key(self) -> str:  # other models give other answers: keep their memos apart
        names = [s if isinstance(s, str) or s is None else f"{type(s.model).__name__}@{id(s)}"
                 for s in self.specs.values()]
        return "hf:" + "|".join(map(str, names)) + f"|{self.dtype}"

    # ------------------------------------------------------------------ models
    def check(self, setting: str = "{key}") -> None:
        """Fail now, in one line naming the setting, when a configured model cannot be
        loaded: no local folder or cache entry, or a detector outside the OWL family.
        Reads config files only; the weights load on first use."""
        import json

        for role, spec in self.specs.items():
            if spec is None or isinstance(spec, Component):
                continue
            where = setting.format(key=role)
            config = _local_config(spec) if self.local_files_only else None
            if config is None and self.local_files_only:
                raise BackendError(
                    f"hf backend: the {role} model {spec!r} is neither a local model folder nor in the "
                    f"local Hugging Face cache; set {where} to one (or to null to go without "
                    f"{TOOLS[role]})")
            kind = json.loads(Path(config).read_text()).get("model_type", "") if config else ""
            if role == "detector" and config and kind not in DETECTORS:
                raise BackendError(f"hf backend: the detector {spec!r} is a {kind!r} model; find needs "
                                   f"the OWL family ({', '.join(DETECTORS)}): set {where} to one")

    def component(self, role: str) -> Component:
        if role not in self.loaded:
            spec = self.specs[role]
            if spec is None:
                raise RuntimeError(f"the hf backend has no {role} model ({role} is null), so "
                                   f"{TOOLS[role]} cannot be used")
            comp = spec if isinstance(spec, Component) else self._load(role, spec)
            comp.model = comp.model.to(self.device, self.dtype).eval()
            self.loaded[role] = comp
        return self.loaded[role]

    def _load(self, role: str, name: str) -> Component:
        import transformers as tf

        auto = {"detector": tf.AutoModelForZeroShotObjectDetection, "clip": tf.AutoModel,
                "vqa": tf.AutoModelForImageTextToText}[role]
        kw = {"local_files_only": self.local_files_only}
        try:
            processor = tf.AutoProcessor.from_pretrained(name, **kw)
            model = auto.from_pretrained(name, dtype=self.dtype, **kw)
        except OSError as exc:
            raise RuntimeError(f"hf backend: cannot load the {role} model {name!r} from local "
                               f"files ({exc}); download it once or give a local path "
                               f"in the backend's {role}= setting") from exc
        kind = getattr(model.config, "model_type", "")
        if role == "detector" and kind not in DETECTORS:
            # Grounding DINO scores text tokens, not whole queries: another decoding.
            raise ValueError(f"hf backend: detector {name!r} is a {kind!r} model; the "
                             "find tool supports the OWL family (owlv2, owlvit)")
        return Component(model, processor=processor)

    def _pixels(self, comp: Component, views: list):
        pixels = comp.image_processor(images=[v.image for v in views], return_tensors="pt")
        return pixels["pixel_values"].to(self.device, self.dtype)

    def _texts(self, comp: Component, texts: list, pad_to: int | None = None):
        kw = {"padding": "max_length", "max_length": pad_to} if pad_to else {"padding": True}
        ids = comp.tokenizer(list(texts), return_tensors="pt", truncation=True, **kw)
        return {k: v.to(self.device) for k, v in ids.items() if k in ("input_ids", "attention_mask")}

    # ---------------------------------------------------------------- detection
    def batch_find(self, views: list, args_list: list) -> list:
        comp = self.component("detector")
        crops, crop_index = _unique(views, lambda v: (v.digest, v.box))
        phrases, phrase_index = _unique([a[0] for a in args_list], lambda p: p)
        max_len = comp.model.config.text_config.max_position_embeddings
        # OWL takes the same queries for every image: all phrases, tiled per crop.
        text = self._texts(comp, phrases * len(crops), pad_to=max_len)
        with self.torch.inference_mode():
            out = comp.model(pixel_values=self._pixels(comp, crops), **text)
        scores = out.logits.float().sigmoid().cpu().numpy()   # (crops, patches, phrases)
        boxes = out.pred_boxes.float().cpu().numpy()          # (crops, patches, 4)
        # OWLv2 pads images to a square before predicting; OWL-ViT stretches them.
        padded = getattr(comp.model.config, "model_type", "owlv2") != "owlvit"
        results = []
        for ci, pi in zip(crop_index, phrase_index):
            h, w = crops[ci].image.shape[:2]
            hits = np.nonzero(scores[ci, :, pi] > self.box_threshold)[0]
            cand, cand_scores = [], []
            for j in hits:
                converted = to_bottom_left(boxes[ci, j], h, w, square_padded=padded)
                if converted:
                    cand.append(converted[0])
                    cand_scores.append(scores[ci, j, pi])
            keep = nms(cand, cand_scores, self.nms_iou)[:self.max_boxes] if cand else []
            results.append(tuple(cand[k] for k in keep))
        return results

    def batch_exists(self, views, args_list):
        return [len(found) > 0 for found in self.batch_find(views, args_list)]

    def find(self, view: View, phrase: str) -> tuple:
        return self.batch_find([view], [(phrase,)])[0]

    def exists(self, view: View, phrase: str) -> bool:
        return self.batch_exists([view], [(phrase,)])[0]

    # ------------------------------------------------------------- CLIP scores
    def _similarity(self, views: list, texts: list) -> np.ndarray:
        """Logit-scaled image-text similarity, (len(views), len(texts))."""
        comp = self.component("clip")
        # SigLIP was trained on texts padded to full length; CLIP on padded-to-longest.
        siglip = "siglip" in getattr(comp.model.config, "model_type", "")
        text = self._texts(comp, texts, comp.tokenizer.model_max_length if siglip else None)
        with self.torch.inference_mode():
            out = comp.model(pixel_values=self._pixels(comp, views), **text)
        return out.logits_per_image.float().cpu().numpy()

    def batch_match_score(self, views, args_list):
        crops, ci = _unique(views, lambda v: (v.digest, v.box))
        texts, ti = _unique([a[0] for a in args_list], lambda t: t)
        sim = self._similarity(crops, texts)
        return [float(sim[c, t]) for c, t in zip(ci, ti)]

    def batch_verify_property(self, views, args_list):
        # CLIP has no yes/no head: compare "<prop> <object>" against the object alone
        # ... being something else, and accept when the property side wins.
        crops, ci = _unique(views, lambda v: (v.digest, v.box))
        texts = []
        for name, prop in args_list:
            texts += [f"a photo of a {prop} {name}", f"a photo of a {name} that is not {prop}"]
        texts, ti = _unique(texts, lambda t: t)
        sim = self._similarity(crops, texts)
        out = []
        for k, c in enumerate(ci):
            pair = sim[c, [ti[2 * k], ti[2 * k + 1]]]
            p = np.exp(pair - pair.max())
            out.append(bool(p[0] / p.sum() > self.property_threshold))
        return out

    def match_score(self, view, text):
        return self.batch_match_score([view], [(text,)])[0]

    def verify_property(self, view, object_name, prop):
        return self.batch_verify_property([view], [(object_name, prop)])[0]

    # -------------------------------------------------------------------- VQA
    def batch_simple_query(self, views, args_list):
        comp = self.component("vqa")
        prompts = [self._vqa_prompt(comp, a[0]) for a in args_list]
        comp.tokenizer.padding_side = "left"  # generation continues on the right
        inputs = comp.processor(images=[v.image for v in views], text=prompts,
                                return_tensors="pt", padding=True)
        inputs = {k: (v.to(self.device, self.dtype) if v.is_floating_point() else
                      v.to(self.device)) for k, v in inputs.items()}
        with self.torch.inference_mode():
            out = comp.model.generate(**inputs, max_new_tokens=self.max_new_tokens,
                                      do_sample=False)
        n = inputs["input_ids"].shape[1]
        # Decoder-only models echo the prompt; encoder-decoder ones (Flan-T5) do not.
        if out.shape[1] > n and bool((out[:, :n] == inputs["input_ids"]).all()):
            out = out[:, n:]
        texts = comp.tokenizer.batch_decode(out, skip_special_tokens=True)
        return [t.strip().lower() for t in texts]

    def _vqa_prompt(self, comp: Component, question: str) -> str:
        # Chat VLMs need their image token placed by their own template; BLIP-2 style
        # models take the plain "Question: ... Answer:" prompt.
        if getattr(comp.processor, "chat_template", None):
            content = [{"type": "image"}, {"type": "text", "text": question}]
            return comp.processor.apply_chat_template([{"role": "user", "content": content}],
                                                      add_generation_prompt=True)
        return self.vqa_prompt.format(question=question)

    batch_answer = batch_simple_query

    def batch_describe(self, views, args_list):
        return self.batch_simple_query(views, [("What is in this image?",)] * len(views))

    def simple_query(self, view, question):
        return self.batch_simple_query([view], [(question,)])[0]

    def answer(self, view, question):
        return self.simple_query(view, question)

    def describe(self, view):
        return self.batch_describe([view], [()])[0]


def _local_config(name: str) -> str | None:
    """The config.json of a model folder or of a Hub id in the local cache, else None."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        return str(folder / "config.json") if (folder / "config.json").is_file() else None
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(name, "config.json")
    except Exception:  # not a valid repo id either
        return None
    return found if isinstance(found, str) else None


def _unique(items: list, key) -> tuple:
    """(distinct items, index of each input in them): each crop and text goes through the
    model once however many requests share it."""
    seen: dict = {}
    distinct, index = [], []
    for item in items:
        k = key(item)
        if k not in seen:
            seen[k] = len(distinct)
            distinct.append(item)
        index.append(seen[k])
    return distinct, index
