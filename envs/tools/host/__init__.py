"""The host side of the tools: what runs outside the sandbox, where models may load.

``ToolHost`` (server.py) serves tool calls to sandbox workers over a socket and checks
every request (requests.py); ``open_backend`` (opening.py) is how an entry point gets
its tools, starting a host when the backend needs one.  Sandbox workers import only
the program side (``envs.tools`` and its ``host_client``), never this package.

Run a host as its own process with ``python -m envs.tools.host --backend hf --socket PATH``.
"""
from __future__ import annotations

from envs.tools.host.opening import Tools, check_backend, open_backend
from envs.tools.host.server import DEFAULT_LLM, ToolHost, main

__all__ = ["DEFAULT_LLM", "ToolHost", "Tools", "check_backend", "main", "open_backend"]
