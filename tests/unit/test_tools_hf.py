"""The ``hf`` backend's plumbing, on tiny randomly initialised models.

Mock/random-weights boundary: real checkpoints (OWLv2, CLIP, BLIP-2) cannot be
downloaded here, so every model is built from a tiny config with random weights and
the tokenizer is a word-level one built in memory.  The answers are therefore
meaningless; what is tested is what does not depend on weights: box conversion to the
bottom-left origin, batching (N requests -> one forward), dtype/device handling, and the
backend served through the tool host to sandboxed programs.
"""
from __future__ import annotations

import threading
from types import SimpleNamespace

import numpy as np
import pytest
import torch
import transformers as tf

from envs.tools import build_namespace  # noqa: E402
from envs.tools.api import make_api  # noqa: E402
from envs.tools import hf_backend  # noqa: E402
from envs.tools.hf_backend import Component, HFBackend, nms, to_bottom_left  # noqa: E402

WORDS = ["[PAD]", "[UNK]", "<s>", "</s>", "<image>", "a", "photo", "of", "red", "blue",
         "circle", "square", "dog", "cat", "that", "is", "not", "what", "in", "this", "image",
         "?", "question", ":", "answer", "yes", "no"]
TEXT = dict(vocab_size=len(WORDS), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
            num_attention_heads=2, max_position_embeddings=16)
VISION = dict(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
              image_size=32, patch_size=8)


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(WORDS)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                      bos_token="<s>", eos_token="</s>")


@pytest.fixture(scope="module")
def parts():
    """Random-weight stand-ins for OWLv2, CLIP and BLIP-2 (see the module docstring)."""
    torch.manual_seed(0)
    tok = _tokenizer()
    owl = tf.Owlv2ForObjectDetection(tf.Owlv2Config(text_config=TEXT, vision_config=VISION,
                                                    projection_dim=16))
    size = {"height": 32, "width": 32}
    detector = Component(owl, tf.Owlv2ImageProcessor(size=size), tok)
    clip = Component(tf.CLIPModel(tf.CLIPConfig(text_config=TEXT, vision_config=VISION,
                                                projection_dim=16)),
                     tf.CLIPImageProcessor(size=size, crop_size=size), tok)
    opt = tf.OPTConfig(vocab_size=len(WORDS), hidden_size=16, ffn_dim=32, num_hidden_layers=1,
                       num_attention_heads=2, max_position_embeddings=64, word_embed_proj_dim=16,
                       pad_token_id=0, bos_token_id=2, eos_token_id=3)
    blip = tf.Blip2ForConditionalGeneration(tf.Blip2Config(
        vision_config=VISION, text_config=opt.to_dict(), num_query_tokens=4, image_token_index=4,
        qformer_config=dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, encoder_hidden_size=16, vocab_size=len(WORDS))))
    processor = tf.Blip2Processor(image_processor=tf.BlipImageProcessor(size=size),
                                  tokenizer=tok, num_query_tokens=4)
    return {"detector": detector, "clip": clip, "vqa": Component(blip, processor=processor)}


def _backend(parts, **kw):
    return HFBackend(**parts, device="cpu", max_new_tokens=3, **kw)


IMAGE = np.random.default_rng(0).integers(0, 255, (100, 100, 3), dtype=np.uint8)


def test_boxes_convert_to_bottom_left_origin():
    # 100 high x 200 wide: OWLv2 pads to a 200x200 square, so fractions are of 200.
    assert to_bottom_left([[0.25, 0.1, 0.1, 0.1]], 100, 200) == [(40, 70, 60, 90)]
    # Without square padding, y fractions are of the height.
    assert to_bottom_left([[0.25, 0.2, 0.1, 0.2]], 100, 200, square_padded=False) \
        == [(40, 70, 60, 90)]
    # A box lying entirely in the padding is dropped; one crossing the edge is clipped.
    assert to_bottom_left([[0.5, 0.8, 0.2, 0.1]], 100, 200) == []
    assert to_bottom_left([[0.05, 0.5, 0.2, 0.2]], 100, 100) == [(0, 40, 15, 60)]
    assert nms([(0, 0, 10, 10), (1, 1, 10, 10), (20, 20, 30, 30)], [0.9, 0.8, 0.7], 0.5) == [0, 2]


class FixedDetector(torch.nn.Module):
    """Predicts one known box (top-left origin, fractions of the padded square)."""

    config = SimpleNamespace(text_config=SimpleNamespace(max_position_embeddings=16))

    def __init__(self):
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(()))

    def forward(self, pixel_values, input_ids, attention_mask):
        n, queries = pixel_values.shape[0], input_ids.shape[0] // pixel_values.shape[0]
        logits = torch.full((n, 2, queries), -10.0)
        logits[:, 0, :] = 10.0
        boxes = torch.tensor([[0.5, 0.25, 0.2, 0.1], [0.5, 0.5, 0.1, 0.1]]).expand(n, 2, 4)
        return SimpleNamespace(logits=logits * self.scale, pred_boxes=boxes)


def test_find_returns_full_image_boxes_with_bottom_left_origin(parts):
    det = Component(FixedDetector(), parts["detector"].image_processor, parts["detector"].tokenizer)
    ns = make_api(HFBackend(detector=det, device="cpu"))
    crop = ns["ImagePatch"](IMAGE).crop(10, 20, 90, 60)  # 80 wide, 40 high
    (found,) = crop.find("red circle")
    # in the crop: x 32..48, rows 16..24 from the top of a 40-high crop -> lower 16, upper 24
    assert (found.left, found.lower, found.right, found.upper) == (42, 36, 58, 44)
    assert crop.exists("dog")


def test_batched_find_makes_one_forward_and_stays_inside_the_crops(parts):
    backend = _backend(parts, box_threshold=0.0)
    ns = make_api(backend)
    patch = ns["ImagePatch"](IMAGE)
    crops = [patch, patch.crop(0, 0, 50, 50), patch.crop(30, 40, 100, 90)]
    views = [_view_of(c) for c in crops] * 2
    phrases = [("red circle",), ("dog",), ("blue square",)] * 2
    calls = []
    backend.component("detector").model.register_forward_hook(lambda *a: calls.append(1))
    results = backend.batch_find(views, phrases)
    assert len(calls) == 1 and len(results) == 6 and any(results)
    for view, boxes in zip(views, results):
        h, w = view.image.shape[:2]
        assert all(0 <= l < r <= w and 0 <= lo < u <= h for l, lo, r, u in boxes)


def test_clip_scores_and_properties_are_batched(parts):
    backend = _backend(parts)
    ns = make_api(backend)
    patches = [ns["ImagePatch"](IMAGE).crop(0, 0, 50, 50), ns["ImagePatch"](IMAGE)]
    calls = []
    backend.component("clip").model.register_forward_hook(lambda *a: calls.append(1))
    scores = backend.batch_match_score([_view_of(p) for p in patches], [("dog",), ("cat",)])
    verdicts = backend.batch_verify_property([_view_of(p) for p in patches],
                                             [("dog", "red"), ("cat", "blue")])
    assert len(calls) == 2 and all(isinstance(s, float) for s in scores)
    assert all(isinstance(v, bool) for v in verdicts)
    assert ns["best_image_match"](patches, ["red dog"]) in patches


def test_vqa_answers_a_batch_with_one_generate(parts):
    backend = _backend(parts)
    model = backend.component("vqa").model
    real, calls = model.generate, []
    model.generate = lambda **kw: calls.append(1) or real(**kw)
    ns = make_api(backend)
    views = [_view_of(ns["ImagePatch"](IMAGE)), _view_of(ns["ImagePatch"](IMAGE[:40]), IMAGE[:40])]
    answers = backend.batch_simple_query(views, [("what is this ?",), ("a dog ?",)])
    assert len(calls) == 1 and all(isinstance(a, str) for a in answers)
    assert isinstance(ns["ImageObject"](IMAGE).describe(), str)
    del model.generate


def test_dtype_and_device_are_applied_to_models_and_inputs(parts):
    backend = HFBackend(**parts, device="cpu", dtype="bfloat16", box_threshold=0.0)
    ns = make_api(backend)
    # Runs end to end (pixel values cast to bfloat16); random boxes may all be degenerate.
    assert isinstance(ns["ImagePatch"](IMAGE).find("dog"), list)
    assert isinstance(backend.batch_match_score([_view_of(ns["ImagePatch"](IMAGE))],
                                                [("dog",)])[0], float)
    param = next(backend.component("detector").model.parameters())
    assert param.dtype == torch.bfloat16 and param.device.type == "cpu"
    assert HFBackend(**parts, device="cpu").dtype == torch.float32  # auto on CPU
    with pytest.raises(ValueError, match="dtype"):
        HFBackend(**parts, dtype="int8")
    for role in ("detector", "clip"):  # the module fixture is shared
        backend.component(role).model.float()


def test_hf_backend_is_refused_inside_sandbox_workers(monkeypatch):
    monkeypatch.setattr(hf_backend, "_in_sandbox_worker", lambda: True)
    with pytest.raises(RuntimeError, match="tool host"):
        hf_backend.make_hf_backend()


def test_missing_local_checkpoint_names_the_setting(tmp_path):
    backend = HFBackend(detector=str(tmp_path / "no-such-model"), device="cpu")
    with pytest.raises(RuntimeError, match="detector"):
        backend.component("detector")


def test_host_batches_find_requests_from_several_workers(parts):
    from envs.tools.host import ToolHost
    from envs.tools.host_client import Connection, HostClient

    det = Component(FixedDetector(), parts["detector"].image_processor, parts["detector"].tokenizer)
    backend = HFBackend(detector=det, device="cpu")
    calls = []
    backend.component("detector").model.register_forward_hook(lambda *a: calls.append(1))
    ns = build_namespace("shapes-cv")
    view = _view_of(ns["ImagePatch"](IMAGE))
    n = 4
    with ToolHost(backend, llm=None, batch_window_s=0.2) as host:
        clients = [HostClient(Connection(host.socket_path, 20.0)) for _ in range(n)]
        barrier, out = threading.Barrier(n), [None] * n

        def ask(i):
            barrier.wait()
            out[i] = clients[i].find(view, ["dog", "cat", "red circle", "blue square"][i])

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
    assert out == [((40, 70, 60, 80),)] * n  # FixedDetector's box on the 100x100 image
    assert len(calls) < n


def _view_of(patch, root=IMAGE):
    """The backend View behind a patch of ``root``, built the way the API builds it."""
    from envs.common.images import image_digest
    from envs.tools.api import frozen_array
    from envs.tools.backend import View

    root = frozen_array(root)
    h = root.shape[0]
    box = (patch.left, patch.lower, patch.right, patch.upper)
    return View(root[h - box[3]:h - box[1], box[0]:box[2]], root, box, image_digest(root))


def test_sandboxed_programs_use_the_hf_backend_through_the_host(parts):
    from envs.execution import Executor
    from envs.tools.host import ToolHost

    det = Component(FixedDetector(), parts["detector"].image_processor, parts["detector"].tokenizer)
    backend = HFBackend(detector=det, vqa=parts["vqa"], clip=parts["clip"], device="cpu",
                        max_new_tokens=2)
    prog = ("def execute_command(image):\n"
            "    patch = ImagePatch(image).find('dog')[0]\n"
            "    return str((patch.left, patch.lower, patch.right, patch.upper)) + "
            "str(isinstance(patch.simple_query('what is this ?'), str))\n")
    with ToolHost(backend, llm=None) as host, \
            Executor(workers=1, timeout_s=10, backend=host.spec) as ex:
        (result,) = ex.run([prog], [IMAGE])
    assert result.status == "ok", result.error
    assert result.answer == "(40, 70, 60, 80)true"


def test_models_load_by_name_from_a_local_folder(parts, tmp_path):
    """What a config does: ``backend: hf`` with model paths as backend kwargs (the random
    tiny detector is saved first, since real checkpoints cannot be downloaded here)."""
    from envs.tools import get_backend

    det = parts["detector"]
    tf.Owlv2Processor(image_processor=det.image_processor, tokenizer=det.tokenizer) \
        .save_pretrained(tmp_path)
    det.model.save_pretrained(tmp_path)
    backend = get_backend("hf", detector=str(tmp_path), device="cpu", box_threshold=0.0)
    found = make_api(backend)["ImagePatch"](IMAGE).find("dog")
    assert isinstance(found, list) and str(tmp_path) in backend.cache_key
    assert type(backend.component("detector").model).__name__ == "Owlv2ForObjectDetection"
