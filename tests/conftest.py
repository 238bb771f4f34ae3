"""Fixtures every tier shares."""

import pytest


@pytest.fixture(scope="session")
def tool_executor():
    """One sandbox with the default tools (shapes-cv), one worker, for the whole session:
    starting a zygote per test module cost seconds each. A module that needs other
    settings (a plain namespace, limits, two workers) defines its own `ex`/`executor`."""
    from envs.execution import Executor

    with Executor(workers=1) as executor:
        yield executor


@pytest.fixture
def ex(tool_executor):
    return tool_executor


@pytest.fixture
def executor(tool_executor):
    return tool_executor
