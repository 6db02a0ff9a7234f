"""Hooks pytest-rocm adds, for conftests and other plugins (registered in ``pytest_addhooks``).

In the style of pytest-xdist's ``newhooks.py``: implement one in a ``conftest.py`` or a plugin by
defining a function of that name (arguments are passed by name, so take only those you use)::

    # conftest.py
    from pytest_rocm.env.model import Environment

    def pytest_rocm_detect_environment(config):
        return Environment.load("ci/mi300x.json")  # or None: the plugin detects as usual
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_rocm.env.model import Environment


@pytest.hookspec(firstresult=True)
def pytest_rocm_detect_environment(config: pytest.Config) -> Environment | None:
    """Supply the session's environment instead of detecting it.

    Called at most once per session, when something first needs the environment (a marker that
    reads it, the ``rocm_env``/``rocm_device`` fixtures, an option about the hardware, the junit
    properties, an xdist controller), and not at all when ``--rocm-env`` gives a recorded one or in
    an xdist worker (the controller's environment, supplied or detected, is handed to its workers).

    Return a :class:`~pytest_rocm.env.model.Environment` to use it (the first implementation that
    returns one wins; the header says ``[env: pytest_rocm_detect_environment]``), or None to let the
    next implementation, and finally the plugin's own detection, decide. The environment is treated
    like a detected one: it describes this machine (``rocm_device`` gives ``cuda:N`` for its device
    without checking that torch here sees it); to pretend to be another machine, use ``--rocm-env``.

    :param config: the pytest config (options, ini values, ``config.rootpath``).
    """
