"""One header line when the setup is broken (``rocm doctor: 2 problems, run `rocm-compat doctor```),
so a failing CI log points at the cause before the first failing test does.

The header runs before any test asked for torch, so unless the environment is already known
(``--rocm-env``, or handed over by xdist) only the checks that need no torch run here: sysfs reads,
a few milliseconds.
"""

from __future__ import annotations

import pytest


def header_line(config: pytest.Config) -> str | None:
    from pytest_rocm.doctor import checks as doctor_checks
    from pytest_rocm.doctor import render as doctor
    from pytest_rocm.env.detect import detect_system
    from pytest_rocm.env.model import VARIABLES, Environment
    from pytest_rocm.env.seam import Seam, SysrootError
    from pytest_rocm.plugin import session as state

    try:
        seam = Seam()
    except SysrootError:
        return None  # the plugin reports a bad sysroot as a usage error of its own
    env = state.environment_if_known(config)
    if env is not None:
        checks = doctor_checks.diagnose(env, doctor.probe_extras(seam, env))
    else:
        env = Environment(system=detect_system(seam), variables={v: seam.getenv(v) for v in VARIABLES})
        checks = doctor_checks.diagnose_system(env, doctor.probe_extras(seam, env))
    return doctor.summary_line(checks)


@pytest.hookimpl(trylast=True)
def pytest_report_header(config: pytest.Config) -> list[str]:
    if hasattr(config, "workerinput"):  # xdist workers print no header
        return []
    line = header_line(config)
    return [line] if line else []
