"""Opening a backend for an entry point: check it, and start a tool host when the
backend needs one (models must never load inside a sandbox worker)."""
from __future__ import annotations

from envs.tools.backend import Backend, BackendError
from envs.tools.host import server
from envs.tools.registry import available_backends, get_backend


class Tools:
    """An opened backend. ``spec`` is what ``Executor(backend=...)`` takes: the backend's
    name, or a tool host's socket when the models live in one; ``close()`` stops the host."""

    def __init__(self, spec: str, host=None):
        self.spec, self.host = spec, host

    def close(self) -> None:
        if self.host is not None:
            self.host.close()
            self.host = None

    def __enter__(self) -> "Tools":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def check_backend(name: str = "shapes-cv", kwargs: dict | None = None, *, tool_host: str = "auto",
                  setting: str = "backend_kwargs.{key}") -> Backend:
    """The backend ``open_backend`` would serve, built and checked but not started: an unknown
    name or setting, or a model that cannot be loaded, is a BackendError naming the setting."""
    if name not in available_backends():
        raise BackendError(f"unknown backend {name!r}; known: {', '.join(available_backends())}")
    if tool_host not in ("auto", "always", "never"):
        raise BackendError(f"tool_host {tool_host!r}: use auto, always or never")
    if kwargs and not _hosted(name, kwargs, tool_host):
        raise BackendError(f"{setting.format(key='...')} needs a tool host (sandbox workers build a "
                           "backend from its name alone); use tool_host auto or always")
    try:
        backend = get_backend(name, **dict(kwargs or {}))
    except (TypeError, ValueError) as err:  # a misspelt setting, a bad value
        raise BackendError(f"tool backend {name!r}: {err}; check {setting.format(key='...')}") from None
    check = getattr(backend, "check", None)
    if callable(check):
        check(setting)
    return backend


def _hosted(name: str, kwargs: dict | None, tool_host: str) -> bool:
    # Sandbox workers must never load models, and they build a backend from its name alone.
    return tool_host == "always" or (tool_host == "auto" and (name != "shapes-cv" or bool(kwargs)))


def open_backend(name: str = "shapes-cv", kwargs: dict | None = None, *, tool_host: str = "auto",
                 setting: str = "backend_kwargs.{key}", llm="default") -> Tools:
    """Check a backend and start what it needs; every entry point opens its tools here
    (the trainer, `vprl eval`, `vprl exec` and the Gymnasium environments).

    name, kwargs: a registered backend and its settings (e.g. hf's model names).
    tool_host: "auto" serves every backend but shapes-cv (and any backend given settings)
        from a tool host in this process, since sandbox workers must never load models;
        "always" or "never" force it.
    setting: how the caller spells a setting in messages ("env.backend_kwargs.{key}" in a
        config, "--backend-arg {key}=..." on a command line).
    llm: the tool host's text LLM for llm_query (default: the embedded model; None: none).
    A backend whose models cannot be loaded fails here, before anything runs, with a
    BackendError naming the setting.
    """
    backend = check_backend(name, kwargs, tool_host=tool_host, setting=setting)
    if not _hosted(name, kwargs, tool_host):
        return Tools(name)
    host = server.ToolHost(backend, llm=server.DEFAULT_LLM if llm == "default" else llm).start()
    return Tools(host.spec, host)
