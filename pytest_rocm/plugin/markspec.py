"""The shape of a plugin marker: its spec (name, help, parser, decision) and what flows through it.

:mod:`pytest_rocm.plugin.marks` defines the markers and the registry; this module holds only the
types they share, so modules that define or read markers need not import each other.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pytest_rocm.plugin.device_choice import DeviceChoice

#: the installed version of a distribution (``requires``), None when absent
VersionOf = Callable[[str], str | None]


class MarkerError(ValueError):
    """A marker whose arguments are wrong; the message names the marker and the bad value."""


#: a marker's typed arguments: a small frozen dataclass of its own, what its ``parse`` returns
A = TypeVar("A")


@dataclass(frozen=True)
class NoArgs:
    """The arguments of a marker that takes none (``rocm_gpu``, ``rocm_backend``)."""


@dataclass(frozen=True)
class Parsed:
    name: str
    #: the marker's typed arguments, validated and normalised once (what its ``parse`` returned)
    args: Any
    text: str  # the marker as written, for messages: gfx('gfx942')


@dataclass(frozen=True)
class Decision:
    skip: str | None = None
    #: (reason, strict) when the test is expected to fail here; strict None: pytest's xfail_strict
    xfail: tuple[str, bool | None] | None = None


RUN = Decision()


@dataclass(frozen=True)
class Context:
    """What decisions read: the device choice (None when no marker of the test needs the environment)
    and the version of an installed distribution (``requires``)."""

    device_choice: DeviceChoice | None
    version_of: VersionOf

    @property
    def choice(self) -> DeviceChoice:
        assert self.device_choice is not None, "evaluate() gives markers that need it a device choice"
        return self.device_choice


@dataclass(frozen=True)
class MarkerSpec(Generic[A]):
    """One marker: ``parse`` validates and normalises its arguments at collection (its signature is
    the marker's) into the marker's own frozen dataclass ``A``, ``decide`` turns them into a
    :class:`Decision` (pure). ``name`` is the canonical,
    prefixed name (``rocm_gpu``); ``short`` the first version's name (``gpu``), an alias only where
    the project under test does not own a marker of that name (:mod:`pytest_rocm.plugin.marks`)."""

    name: str
    parse: Callable[..., A]
    decide: Callable[[A, Context], Decision]
    help: str
    #: whether deciding it needs the environment (detection: torch)
    needs_env: bool = True
    #: the short alias; None when the canonical name is the only one
    short: str | None = None

    @property
    def signature(self) -> str:
        return self.signature_as(self.name)

    def signature_as(self, name: str) -> str:
        """``rocm_gpus(n)``: the marker's call shape under ``name``, for --markers and messages."""
        parts = []
        for param in inspect.signature(self.parse).parameters.values():
            if param.kind is param.VAR_POSITIONAL:
                parts.append(f"*{param.name}")
            elif param.default is not param.empty:
                parts.append(f"{param.name}={param.default!r}")
            else:
                parts.append(param.name)
        return f"{name}({', '.join(parts)})" if parts else name
