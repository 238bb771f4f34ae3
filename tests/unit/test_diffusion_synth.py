"""DiffusersSynthesizer (ViUniT image synthesis M) on tiny, randomly initialised diffusers pipelines."""

from __future__ import annotations

import json
import socket
import sys

import numpy as np
import pytest
import torch

from diffusers import (
    AutoencoderKL,
    DDIMScheduler,
    StableDiffusionGLIGENPipeline,
    StableDiffusionPipeline,
    StableDiffusionXLPipeline,
    UNet2DConditionModel,
)
from transformers import (
    CLIPImageProcessor,
    CLIPTextConfig,
    CLIPTextModel,
    CLIPTextModelWithProjection,
    CLIPTokenizer,
)

from rewards.unit_tests.diffusion import LAYOUT_PROMPT, DiffusersSynthesizer, parse_layout  # noqa: E402

SIZE = 32
FAST = dict(steps=2, height=SIZE, width=SIZE)


# ---- tiny components -------------------------------------------------------------------

@pytest.fixture(scope="module", autouse=True)
def one_thread():
    # tiny convolutions gain nothing from threads, and on a shared CPU spinning OpenMP
    # workers made this file ten times slower
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    # CLIP's BPE runs over a byte-level alphabet; a vocabulary of just those symbols (plus a
    # couple of merges) tokenizes any text, one symbol per token.
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    symbols = [chr(b) for b in printable] + [chr(256 + i) for i in range(256 - len(printable))]
    merges = ["a n", "an d</w>"]
    tokens = symbols + [s + "</w>" for s in symbols] + ["an", "and</w>", "<|startoftext|>", "<|endoftext|>"]
    folder = tmp_path_factory.mktemp("clip_tokenizer")
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n")
    return CLIPTokenizer.from_pretrained(str(folder), model_max_length=77)


def text_config(tok, **kw):
    return CLIPTextConfig(vocab_size=len(tok), bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                          pad_token_id=tok.pad_token_id, hidden_size=32, intermediate_size=37,
                          num_attention_heads=4, num_hidden_layers=2, max_position_embeddings=77, **kw)


def vae():
    return AutoencoderKL(block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4,
                         down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
                         norm_num_groups=2, sample_size=SIZE)


def unet(**kw):
    return UNet2DConditionModel(block_out_channels=(8, 16), layers_per_block=1, sample_size=SIZE // 2,
                                in_channels=4, out_channels=4, norm_num_groups=2,
                                down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), **kw)


def scheduler():
    return DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                         clip_sample=False, set_alpha_to_one=False, steps_offset=1)


def sd_pipe(tok, safety_checker=None):
    torch.manual_seed(0)
    return StableDiffusionPipeline(
        vae=vae(), text_encoder=CLIPTextModel(text_config(tok)), tokenizer=tok,
        unet=unet(cross_attention_dim=32, attention_head_dim=4), scheduler=scheduler(),
        safety_checker=safety_checker,
        feature_extractor=CLIPImageProcessor(size={"shortest_edge": 8}, crop_size={"height": 8, "width": 8})
        if safety_checker is not None else None,
        requires_safety_checker=False)


def sdxl_pipe(tok):
    torch.manual_seed(0)
    # SDXL conditions on both encoders' hidden states (32 + 32) and on the pooled projection
    # plus six size/crop time ids embedded at 8 dims each.
    return StableDiffusionXLPipeline(
        vae=vae(), text_encoder=CLIPTextModel(text_config(tok)),
        text_encoder_2=CLIPTextModelWithProjection(text_config(tok, projection_dim=32)),
        tokenizer=tok, tokenizer_2=tok, scheduler=scheduler(),
        unet=unet(cross_attention_dim=64, attention_head_dim=(2, 4), use_linear_projection=True,
                  addition_embed_type="text_time", addition_time_embed_dim=8,
                  projection_class_embeddings_input_dim=6 * 8 + 32),
        add_watermarker=False)


def gligen_pipe(tok):
    torch.manual_seed(0)
    return StableDiffusionGLIGENPipeline(
        vae=vae(), text_encoder=CLIPTextModel(text_config(tok)), tokenizer=tok,
        unet=unet(cross_attention_dim=32, attention_head_dim=4, attention_type="gated"),
        scheduler=scheduler(), safety_checker=None, feature_extractor=None, requires_safety_checker=False)


class Spy:
    """Records the keyword arguments of every pipeline call, then runs the real pipeline."""

    def __init__(self, pipe):
        self.pipe, self.calls = pipe, []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        return self.pipe(**kwargs)

    def __getattr__(self, name):
        return getattr(self.pipe, name)


class ScriptedSafetyChecker(torch.nn.Module):
    """Stands in for StableDiffusionSafetyChecker: flags the first `flagged` images it sees."""

    def __init__(self, flagged: int):
        super().__init__()
        self.flagged, self.seen = flagged, 0

    @property
    def device(self):  # the pipeline asks every component where it lives
        return torch.device("cpu")

    def forward(self, images, clip_input):
        flags = []
        for _ in range(len(images)):
            flags.append(self.seen < self.flagged)
            self.seen += 1
        return images, flags


def pixels(img):
    return np.asarray(img, dtype=np.int16)


CAPTIONS = ["a red cube left of a blue ball", "two green cups on a table"]
LAYOUT = "a red cube: [0.1, 0.3, 0.45, 0.8]\na blue ball: [0.55, 0.35, 0.9, 0.75]\nbackground: a white room\n"


def layout_llm(texts):
    """A layout sampler that answers every prompt with `texts` (the n candidates) and logs calls."""
    calls = []

    def complete(prompts, n):
        calls.append((list(prompts), n))
        return [list(texts)[:n] for _ in prompts]

    complete.calls = calls
    return complete


# ---- generation --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["sd", "sdxl", "gligen"])
def test_one_image_per_caption_of_the_requested_size(tokenizer, kind):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    build = {"sd": sd_pipe, "sdxl": sdxl_pipe, "gligen": gligen_pipe}[kind]
    spy = Spy(build(tokenizer))
    layout = layout_llm([LAYOUT] * 5) if kind == "gligen" else None
    synth = DiffusersSynthesizer(spy, kind=kind, layout=layout, **FAST)
    images = synth(CAPTIONS, seed=3)
    assert len(images) == len(CAPTIONS)
    for img in images:
        assert img is not None and img.size == (SIZE, SIZE) and img.mode == "RGB"
    assert [c["prompt"] for c in spy.calls] == ["a photorealistic image of " + c for c in CAPTIONS]
    assert all(c["num_inference_steps"] == 2 and c["guidance_scale"] == 16.0 for c in spy.calls)
    assert synth.stats["images"] == 2 and synth.stats["dropped"] == 0


def test_paper_defaults():
    synth = DiffusersSynthesizer(lambda **kw: None)
    assert (synth.guidance_scale, synth.steps, synth.nsfw_retries) == (16.0, 50, 10)
    assert synth.prompt_prefix == "a photorealistic image of "


def test_same_seed_same_pixels_other_seed_other_pixels(tokenizer):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    synth = DiffusersSynthesizer(sd_pipe(tokenizer), **FAST)
    a = synth(CAPTIONS, seed=0)
    b = synth(CAPTIONS, seed=0)
    c = synth(CAPTIONS, seed=1)
    for x, y, z in zip(a, b, c):
        assert np.array_equal(pixels(x), pixels(y))
        assert np.abs(pixels(x) - pixels(z)).max() > 0


# ---- NSFW retries ------------------------------------------------------------------------

@pytest.mark.parametrize("flagged", [0, 3, 10])
def test_nsfw_flag_retries_with_the_next_seeds(tokenizer, flagged):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    checker = ScriptedSafetyChecker(flagged)
    spy = Spy(sd_pipe(tokenizer, safety_checker=checker))
    synth = DiffusersSynthesizer(spy, **FAST)
    [img] = synth(CAPTIONS[:1], seed=7)
    assert img is not None and img.size == (SIZE, SIZE)
    assert [c["generator"].initial_seed() for c in spy.calls] == list(range(7, 7 + flagged + 1))
    assert synth.stats == {"images": 1, "nsfw_retries": flagged, "dropped": 0, "no_layout": 0}
    # the kept image is exactly what the last seed gives on its own
    plain = DiffusersSynthesizer(sd_pipe(tokenizer), **FAST)
    assert np.array_equal(pixels(img), pixels(plain(CAPTIONS[:1], seed=7 + flagged)[0]))


def test_flagged_eleven_times_is_dropped_and_counted(tokenizer):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    spy = Spy(sd_pipe(tokenizer, safety_checker=ScriptedSafetyChecker(11)))
    synth = DiffusersSynthesizer(spy, **FAST)
    images = synth(CAPTIONS, seed=0)
    assert images[0] is None and images[1] is not None
    assert [c["generator"].initial_seed() for c in spy.calls] == list(range(11)) + [0]
    assert synth.stats == {"images": 1, "nsfw_retries": 10, "dropped": 1, "no_layout": 0}


# ---- LM-guided layout ----------------------------------------------------------------------

def test_parse_layout_edge_cases():
    text = """Objects:
1. a red cup: [0.1, 0.2, 0.5, 0.6]
- "a mug (blue)": (0.5, -0.2, 1.4, 0.9)
a cat: [0.1, 0.2, 0.5]
a flat dog: [0.5, 0.2, 0.5, 0.9]
an upside-down box: [0.2, 0.8, 0.6, 0.4]
: [0.1, 0.1, 0.2, 0.2]
background: [0, 0, 1, 1]
background: a sunny kitchen
just some words
a lamp: [0.7, 0.1, 0.9, 0.5] on the right
Caption: a pig in a field
a pig: [0.2, 0.2, 0.8, 0.8]
"""
    phrases, boxes = parse_layout(text)
    assert phrases == ["a red cup", "a mug (blue)", "a lamp"]
    assert boxes == [[0.1, 0.2, 0.5, 0.6], [0.5, 0.0, 1.0, 0.9], [0.7, 0.1, 0.9, 0.5]]
    assert parse_layout("") == ([], [])
    assert parse_layout("I cannot draw that.\nbackground: sky") == ([], [])
    assert parse_layout("a ball: [1.5, 1.2, 2, 3]") == ([], [])  # clamps to an empty box


def test_layout_prompt_has_examples_and_the_caption():
    prompt = LAYOUT_PROMPT.format(caption="a cat on a mat")
    assert prompt.endswith("Caption: a cat on a mat\nObjects:\n")
    examples = prompt.split("Caption: ")[1:-1]
    assert len(examples) >= 3
    for ex in examples:  # every in-context example must itself parse
        assert parse_layout(ex.split("\n", 1)[1])[0]


def test_gligen_without_any_layout_is_dropped(tokenizer):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    spy = Spy(gligen_pipe(tokenizer))
    llm = layout_llm([""] * 5)
    synth = DiffusersSynthesizer(spy, kind="gligen", layout=llm, **FAST)
    assert synth(CAPTIONS[:1]) == [None]
    assert llm.calls == [([LAYOUT_PROMPT.format(caption=CAPTIONS[0])], 5)]
    assert spy.calls == []
    assert synth.stats["no_layout"] == 1 and synth.stats["images"] == 0


def test_gligen_takes_the_first_candidate_with_boxes(tokenizer):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    spy = Spy(gligen_pipe(tokenizer))
    llm = layout_llm(["", "no boxes here", LAYOUT, "a dog: [0, 0, 1, 1]", ""])
    synth = DiffusersSynthesizer(spy, kind="gligen", layout=llm, **FAST)
    [img] = synth(CAPTIONS[:1], seed=0)
    assert img is not None and img.size == (SIZE, SIZE)
    [call] = spy.calls
    assert call["gligen_phrases"] == ["a red cube", "a blue ball"]
    assert call["gligen_boxes"] == [[0.1, 0.3, 0.45, 0.8], [0.55, 0.35, 0.9, 0.75]]
    assert 0 < call["gligen_scheduled_sampling_beta"] <= 1
    assert call["prompt"] == "a photorealistic image of " + CAPTIONS[0]
    assert synth.stats["no_layout"] == 0 and synth.stats["images"] == 1


def test_gligen_needs_a_layout_sampler():
    with pytest.raises(ValueError, match="layout"):
        DiffusersSynthesizer(lambda **kw: None, kind="gligen")


# ---- loading -------------------------------------------------------------------------------

@pytest.fixture
def no_network(monkeypatch):
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    # huggingface_hub >= 2.x looks up an agent registry for its User-Agent on first use, even
    # with local_files_only; that is the client's own metadata, not a model download.
    try:
        import huggingface_hub.utils._detect_agent as detect_agent
        monkeypatch.setattr(detect_agent, "_registry", {"standardEnvVars": [], "harnesses": {}})
    except ImportError:
        pass
    return attempts


def test_missing_local_model_is_a_clear_error_without_download(tmp_path, no_network, monkeypatch):
    seen = {}
    real = StableDiffusionPipeline.from_pretrained.__func__

    def spy(cls, name, **kwargs):
        seen.update(kwargs)
        return real(cls, name, **kwargs)

    monkeypatch.setattr(StableDiffusionPipeline, "from_pretrained", classmethod(spy))
    missing = str(tmp_path / "no-such-model")
    with pytest.raises(FileNotFoundError) as err:
        DiffusersSynthesizer(missing)
    msg = str(err.value)
    assert "\n" not in msg and missing in msg and "download" in msg
    assert seen.get("local_files_only") is True

    with pytest.raises(FileNotFoundError, match="vprl-tests/not-a-model"):
        DiffusersSynthesizer("vprl-tests/not-a-model")  # a hub id that is not in the cache
    assert no_network == []

    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="model_index.json"):
        DiffusersSynthesizer(str(tmp_path / "empty"))


def test_saved_pipeline_loads_from_its_folder(tokenizer, tmp_path, no_network):
    """real diffusers pipeline with random weights: the hub weights are a boundary this machine cannot reach"""
    sd_pipe(tokenizer).save_pretrained(tmp_path / "tiny-sd")
    synth = DiffusersSynthesizer(str(tmp_path / "tiny-sd"), device="cpu", **FAST)
    assert isinstance(synth.pipe, StableDiffusionPipeline)
    [img] = synth(CAPTIONS[:1])
    assert img.size == (SIZE, SIZE)
    assert no_network == []


def test_missing_diffusers_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "diffusers", None)
    with pytest.raises(ImportError, match=r"pip install 'vprl\[diffusion\]'"):
        DiffusersSynthesizer("CompVis/stable-diffusion-v1-4")
