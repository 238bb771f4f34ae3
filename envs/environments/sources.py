"""Entry points of the registered ids: where each environment's questions come from.

- Shapes: generated deterministically from a seed (small by default, so `gym.make` is
  quick), or read from a `vprl data shapes --out DIR` folder with `data_path`.
- Real-dataset presets: `envs.data.hf.load_vqa` on a local copy (`data_path`) in the
  dataset's published schema; nothing is downloaded unless `data_path` names a Hub
  dataset and the Hub is reachable.
"""

from __future__ import annotations

import functools
from pathlib import Path

from envs.environments.env import VisualProgramEnv

ITM_FAMILIES = ("itm",)
# Presets whose questions are `Verify image matches text="..."`.
ITM_PRESETS = ("sugarcrepe", "winoground", "nlvr2")
# Seed 002's chart and document sets, where its tool-API prompt did best zero-shot.
TOOL_API_PRESETS = ("chartqa", "plotqa", "docvqa", "infovqa")
# The metric DataConfig uses for shapes: GQA's exact match with ViperGPT's normalisation.
SHAPES_METRIC = "gqa_accuracy"


def _vqa_families() -> tuple[str, ...]:
    from envs.data.spec import FAMILIES

    return tuple(f for f in FAMILIES if f not in ITM_FAMILIES)


@functools.lru_cache(maxsize=8)
def _generated(split: str, size: int, seed: int, families: tuple, overlap: bool,
               clutter: float):
    # Pure function of its arguments (build_dataset is deterministic), so envs made with
    # the same settings (check_env makes several) share one generated split.
    from envs.data.shapes import SPLITS, build_dataset

    if split not in SPLITS:
        raise ValueError(f"split {split!r}: use one of {', '.join(SPLITS)}")
    counts = {name: (size if name == split else 0) for name in SPLITS}
    return build_dataset(**counts, seed=seed, families=list(families), overlap=overlap,
                         clutter=clutter, progress=False)[split]


def _from_disk(data_path, split: str, families: tuple):
    import datasets

    path = Path(data_path).expanduser()
    if not path.exists():
        raise FileNotFoundError(f"data_path {str(path)!r} does not exist; write a shapes "
                                f"dataset there with `vprl data shapes --out {path}`")
    try:
        dd = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as e:
        raise ValueError(f"data_path {str(path)!r} is not a saved dataset ({e}); write one "
                         f"with `vprl data shapes --out {path}`") from None
    if isinstance(dd, datasets.DatasetDict):
        if split not in dd:
            raise ValueError(f"{path} has no split {split!r}; it has {', '.join(dd)}")
        dd = dd[split]
    if "family" not in dd.column_names:
        raise ValueError(f"{path} has no family column; is it a `vprl data shapes` folder?")
    keep = [i for i, f in enumerate(dd["family"]) if f in families]
    if not keep:
        raise ValueError(f"{path} [{split}] has no questions of the families "
                         f"{', '.join(families)}; regenerate with "
                         f"`vprl data shapes --out DIR --families {','.join(families)}`")
    return dd.select(keep)


def shapes_env(*, itm: bool = False, data_path=None, split: str = "train", size: int = 64,
               seed: int = 0, families=None, overlap: bool = False, clutter: float = 0.0,
               prompt: str | None = None, metric: str = SHAPES_METRIC, **env_kwargs):
    """vprl/Shapes-v0 (VQA families) and vprl/ShapesITM-v0 (`itm=True`).

    size/seed/families/overlap/clutter shape the generated split; data_path reads a
    saved one instead. Other keyword arguments go to VisualProgramEnv.
    """
    allowed = ITM_FAMILIES if itm else _vqa_families()
    families = tuple(families or allowed)
    stray = sorted(set(families) - set(allowed))
    if stray:
        raise ValueError(f"families {stray} do not belong to this environment; choose from "
                         f"{', '.join(allowed)}" + ("" if itm else " (itm questions live in "
                                                     "vprl/ShapesITM-v0)"))
    if data_path is not None:
        rows = _from_disk(data_path, split, families)
    else:
        if int(size) < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        rows = _generated(split, int(size), int(seed), families, bool(overlap), float(clutter))
    prompt = prompt or ("viper_itm" if itm else "viper_compact")
    return VisualProgramEnv(rows, prompt=prompt, metric=metric, **env_kwargs)


def preset_env(*, preset: str, env_id: str | None = None, data_path=None,
               split: str | None = None, subsample=None, columns=None, image_root=None,
               max_bad_fraction: float = 0.05, seed: int = 0, metric: str | None = None,
               cache_dir: str | None = None, prompt: str | None = None, **env_kwargs):
    """vprl/<Preset>-v0: a real VQA or ITM dataset read with `load_vqa`.

    data_path is required: a `save_to_disk` folder, a parquet/json/csv file or a folder
    of them (or of images), in the dataset's published schema. split, subsample,
    columns, image_root, max_bad_fraction, seed, metric and cache_dir go to load_vqa.
    """
    from envs.data.presets import get_preset

    spec = get_preset(preset)
    if data_path is None:
        name = env_id or f"the {spec.name} environment"
        hub = f" (or the Hub copy {spec.hub!r})" if spec.hub else ""
        raise ValueError(
            f"{name} needs data_path=: a local copy of {spec.name} in its published schema "
            f"(a save_to_disk folder, a parquet/json file or a folder of them){hub}, e.g. "
            f"gymnasium.make({env_id or 'ENV_ID'!r}, data_path='/data/{spec.name}', "
            f"split='train'). Nothing is downloaded for you.")
    from envs.data.hf import load_vqa

    rows, _report = load_vqa(data_path, split=split, preset=spec.name, columns=columns,
                             subsample=subsample, max_bad_fraction=max_bad_fraction,
                             seed=seed, metric=metric, image_root=image_root,
                             cache_dir=cache_dir)
    if prompt is None:
        prompt = ("viper_itm" if spec.name in ITM_PRESETS else
                  "tool_api" if spec.name in TOOL_API_PRESETS else "viper_compact")
    return VisualProgramEnv(rows, prompt=prompt, **env_kwargs)
