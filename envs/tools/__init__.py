"""Vision tools for model-written programs: the ImagePatch API and its backends.

``build_namespace(backend)`` gives the globals a program runs with; backends are chosen
by name from a registry (``shapes-cv``, the classical-vision default, is built in).
"""
from __future__ import annotations

from envs.tools.backend import Backend, BackendError, Tools, View, check_backend, open_backend
from envs.tools.registry import available_backends, get_backend, register_backend

register_backend("shapes-cv", "envs.tools.shapes_cv:ShapesCV")
register_backend("hf", "envs.tools.hf_backend:make_hf_backend")
# VLAgent's ensemble: shapes-cv variants (CPU detectors) and the consensus backend.
for _variant in ("half", "third", "blur", "jpeg"):
    register_backend(f"shapes-cv/{_variant}", f"envs.tools.detectors:{_variant}")
register_backend("ensemble", "envs.tools.ensemble:make_ensemble")


def build_namespace(backend: str = "shapes-cv", llm=None, **kwargs) -> dict:
    """Fresh globals for one program: ImagePatch, ImageObject, bool_to_yesno,
    best_image_match, distance, llm_query, coerce_to_numeric, math and typing names.

    ``llm`` (callable question -> str) answers ``llm_query``; other keyword arguments go
    to the backend factory.  The planning-script modules (LOC, CROP, VQA, EVAL, ...;
    ``envs.visprog.modules``) are bound to the same tools, so scripts run here too.  ``backend="host:PATH"`` (``ToolHost.spec``) forwards every
    tool call to a tool host, so heavy models never load inside a sandbox worker.
    """
    from envs.tools.api import make_api
    from envs.visprog.modules import make_modules

    if backend.startswith("host:"):
        from envs.tools.host_client import connect

        namespace = make_api(connect(backend, **kwargs), llm=llm)
    else:
        namespace = make_api(get_backend(backend, **kwargs), llm=llm)
    namespace.update(make_modules(namespace))
    return namespace


__all__ = ["build_namespace", "register_backend", "get_backend", "available_backends",
           "Backend", "BackendError", "Tools", "View", "check_backend", "open_backend"]
