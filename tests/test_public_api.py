"""The public API (pytest_rocm.__all__): every name resolves, lazily, and the cheap ones stay cheap."""

from __future__ import annotations

import subprocess
import sys

import pytest

import pytest_rocm
import pytest_rocm.suite_support


@pytest.mark.parametrize("name", pytest_rocm.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(pytest_rocm, name) is not None
    assert name in dir(pytest_rocm)


def test_all_lists_exactly_the_lazy_names_and_the_eager_ones() -> None:
    assert sorted(pytest_rocm.__all__) == sorted(["__version__", "skip_not_installed", *pytest_rocm._LAZY])


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'state'"):
        _ = pytest_rocm.state  # type: ignore[attr-defined]


def test_environment_types_and_report_names_import_neither_torch_nor_pytest() -> None:
    code = (
        "import sys, pytest_rocm\n"
        "pytest_rocm.Environment, pytest_rocm.Device, pytest_rocm.INFO_PROPERTY, pytest_rocm.ParityResult\n"
        "pytest_rocm.PARITY_PROPERTY, pytest_rocm.ParityOptions, pytest_rocm.EPS, pytest_rocm.default_tolerance, pytest_rocm.distribution_version\n"
        "pytest_rocm.torch_backend, pytest_rocm.device_backend\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pytest', '_pytest'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_documented_accessors_are_the_plugin_session_ones() -> None:
    from pytest_rocm.plugin import session

    assert pytest_rocm.get_environment is session.get_environment
    assert pytest_rocm.get_device is session.get_device
    assert pytest_rocm.device_string is session.device_string


@pytest.mark.parametrize("gone", ["pytest_rocm.state", "pytest_rocm.outcomes", "pytest_rocm.strategies"])
def test_the_old_top_level_modules_are_gone(gone: str) -> None:
    # one name for each thing: the public names are imported from pytest_rocm, the strategies
    # from pytest_rocm.parity.strategies
    with pytest.raises(ModuleNotFoundError):
        __import__(gone)


def test_the_parity_package_does_not_repeat_the_public_names() -> None:
    import pytest_rocm.parity

    assert not hasattr(pytest_rocm.parity, "assert_parity")


def test_a_public_name_may_differ_from_its_module_name() -> None:
    from pytest_rocm.plugin import scale

    assert pytest_rocm.scale_cases is scale.cases  # "module:attribute" in the lazy table


# suite support (pytest_rocm.suite_support): the bundled suites' names, not the user API


@pytest.mark.parametrize("name", pytest_rocm.suite_support.__all__)
def test_every_suite_support_name_resolves(name: str) -> None:
    assert getattr(pytest_rocm.suite_support, name) is not None
    assert name in dir(pytest_rocm.suite_support)


def test_suite_support_all_lists_exactly_its_lazy_names() -> None:
    assert sorted(pytest_rocm.suite_support.__all__) == sorted(pytest_rocm.suite_support._LAZY)


@pytest.mark.parametrize("name", ["kernel_names", "BOUNDARY_CATALOGUE", "llama_cpp_install_line"])
def test_a_suite_support_name_is_not_at_the_root(name: str) -> None:
    assert name not in pytest_rocm.__all__
    with pytest.raises(AttributeError, match=f"no attribute '{name}'"):
        getattr(pytest_rocm, name)


def test_suite_support_names_are_the_defining_modules_ones() -> None:
    from pytest_rocm.coverage import catalogue
    from pytest_rocm.setup import llama

    assert pytest_rocm.suite_support.BOUNDARY_CATALOGUE is catalogue.BOUNDARY_CATALOGUE
    assert pytest_rocm.suite_support.llama_cpp_install_line is llama.install_line


def test_an_unknown_suite_support_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="suite_support' has no attribute 'assert_parity'"):
        _ = pytest_rocm.suite_support.assert_parity  # type: ignore[attr-defined]


def test_suite_support_imports_neither_torch_nor_pytest_until_a_torch_name_is_used() -> None:
    # the llama.cpp rows import it at collection and torch only when a test asks (require_torch)
    code = (
        "import sys, pytest_rocm.suite_support as s\n"
        "s.BOUNDARY_CATALOGUE, s.boundary_row_id, s.sdpa_not_offered_hint, s.llama_cpp_install_line\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pytest', '_pytest'))\n"
        "print(heavy)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
