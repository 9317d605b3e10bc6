"""Makes `pytest autograder` a grader: loads the plugin and provides the `impl` fixture."""

from __future__ import annotations

import pytest

from autograder.loading import Implementation
from autograder.plugin import (  # noqa: F401 - pytest finds hooks by name in this module
    GRADER,
    pytest_addoption,
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_report_teststatus,
    pytest_runtest_makereport,
    pytest_runtestloop,
    pytest_terminal_summary,
)


@pytest.fixture
def impl(request: pytest.FixtureRequest) -> Implementation:
    """The graded code for this test's task, over the reference code of every other task."""
    task_id = request.node.get_closest_marker("task").args[0]
    return Implementation(request.config.stash[GRADER].root, task_id)
