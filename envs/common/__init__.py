"""Helpers every layer of `envs` may import (the sandbox, the tools, the rewards above
them): they import nothing from the project, so sharing them adds no edge between
layers (docs/LAYERS.md)."""
