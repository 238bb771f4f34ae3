"""Vision tools for model-written programs: the ImagePatch API and its backends.

``build_namespace(backend)`` gives the globals a program runs with; backends are chosen
by name from a registry (``shapes-cv``, the classical-vision default, is built in).

This package is the program side, what a sandbox worker imports; the host side
(``envs.tools.host``: the tool host, ``open_backend``) may load models and is never
imported by a worker, so its names below load on first use.
"""
from __future__ import annotations

from envs.tools.api import make_api
from envs.tools.backend import Backend, BackendError, View
# The sandbox calls these two through the module of its namespace factory (worker.py).
from envs.tools.host_client import connect, connections_healthy, reconnect_after_fork  # noqa: F401
from envs.tools.registry import available_backends, get_backend, register_backend
from envs.visprog.modules import make_modules

register_backend("shapes-cv", "envs.tools.shapes_cv:ShapesCV")
register_backend("hf", "envs.tools.hf_backend:make_hf_backend")
# VLAgent's ensemble: shapes-cv variants (CPU detectors) and the consensus backend.
for _variant in ("half", "third", "blur", "jpeg"):
    register_backend(f"shapes-cv/{_variant}", f"envs.tools.detectors:{_variant}")
register_backend("ensemble", "envs.tools.ensemble:make_ensemble")

_HOST_SIDE = ("Tools", "check_backend", "open_backend")


def build_namespace(backend: str = "shapes-cv", llm=None, **kwargs) -> dict:
    """Fresh globals for one program: ImagePatch, ImageObject, bool_to_yesno,
    best_image_match, distance, llm_query, coerce_to_numeric, math and typing names.

    ``llm`` (callable question -> str) answers ``llm_query``; other keyword arguments go
    to the backend factory.  The planning-script modules (LOC, CROP, VQA, EVAL, ...;
    ``envs.visprog.modules``) are bound to the same tools, so scripts run here too.  ``backend="host:PATH"`` (``ToolHost.spec``) forwards every
    tool call to a tool host, so heavy models never load inside a sandbox worker.
    """
    tools = connect(backend, **kwargs) if backend.startswith("host:") else get_backend(backend, **kwargs)
    namespace = make_api(tools, llm=llm)
    namespace.update(make_modules(namespace))
    return namespace


def __getattr__(name):
    if name in _HOST_SIDE:
        from envs.tools import host

        return getattr(host, name)
    raise AttributeError(f"module 'envs.tools' has no attribute {name!r}")


__all__ = ["build_namespace", "register_backend", "get_backend", "available_backends",
           "Backend", "BackendError", "View", *_HOST_SIDE]
