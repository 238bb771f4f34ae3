"""Gymnasium ids, registered on `import envs`.

`vprl/Shapes-v0` and `vprl/ShapesITM-v0` work out of the box; `vprl/<Preset>-v0` takes
`data_path=` to a local copy of the dataset. Entry points are strings, so registering
imports nothing heavy (the sandbox workers import `envs` too).
"""

from __future__ import annotations

import difflib

import gymnasium as gym

NAMESPACE = "vprl"
SOURCES = "envs.environments.sources"
# Preset name -> the dataset's own spelling, used in the id.
PRESET_NAMES = {
    "gqa": "GQA", "vqav2": "VQAv2", "okvqa": "OKVQA", "aokvqa": "AOKVQA",
    "chartqa": "ChartQA", "plotqa": "PlotQA", "docvqa": "DocVQA",
    "infovqa": "InfographicVQA", "sugarcrepe": "SugarCREPE", "winoground": "Winoground",
    "nlvr2": "NLVR2",
}


def preset_id(preset: str) -> str:
    return f"{NAMESPACE}/{PRESET_NAMES.get(preset, preset.upper())}-v0"


def _ids() -> dict[str, tuple[str, dict]]:
    from envs.data.presets import PRESETS

    ids = {f"{NAMESPACE}/Shapes-v0": (f"{SOURCES}:shapes_env", {"itm": False}),
           f"{NAMESPACE}/ShapesITM-v0": (f"{SOURCES}:shapes_env", {"itm": True})}
    for name in PRESETS:
        ids[preset_id(name)] = (f"{SOURCES}:preset_env", {"preset": name,
                                                           "env_id": preset_id(name)})
    return ids


def register_all() -> list[str]:
    """Register every vprl id (idempotent: a second call leaves the registry as it is)."""
    registered = []
    for env_id, (entry_point, kwargs) in _ids().items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, kwargs=kwargs,
                         nondeterministic=False)
        registered.append(env_id)
    return registered


def env_ids() -> list[str]:
    return sorted(i for i in gym.registry if i.startswith(NAMESPACE + "/"))


class UnknownEnvironment(gym.error.Error, KeyError):
    """An id that no vprl environment answers to."""

    def __str__(self) -> str:  # KeyError would print the message quoted
        return str(self.args[0])


def make(env_id: str, **kwargs):
    """`gymnasium.make` with a message that lists the vprl ids when `env_id` is unknown."""
    if env_id not in gym.registry:
        known = env_ids()
        close = difflib.get_close_matches(env_id, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise UnknownEnvironment(
            f"unknown environment {env_id!r}; {hint}vprl registers {', '.join(known)}. "
            "Real datasets take data_path= (e.g. envs.make('vprl/GQA-v0', data_path=DIR)); "
            "register another with gymnasium.register(id=..., entry_point=...).")
    return gym.make(env_id, **kwargs)
