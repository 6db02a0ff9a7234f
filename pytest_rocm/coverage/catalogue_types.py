"""The catalogue's building blocks: an axis (a dimension with its ``ci`` values and those only
``full`` adds) and an op's space of axes and excluded combinations (docs/coverage.md)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_rocm.coverage.arrays import CoveringArray, Dimension, Exclude, covering_array

__all__ = ["DTYPE", "MASKING", "SCALE_STRENGTH", "Axis", "OpSpace"]

#: value patterns that mask other faults of their row (a NaN makes the outputs NaN, zeros and
#: zero-variance rows make a scaled output 0): each covers only combinations that include it
MASKING = frozenset({"nan", "zeros", "masked_rows", "const_rows", "const_channels"})

#: the covering strength of each scale profile
SCALE_STRENGTH = {"ci": 2, "full": 3}


@dataclass(frozen=True)
class Axis:
    name: str
    ci: tuple[str, ...]
    #: values only the full profile adds (big sizes)
    full: tuple[str, ...] = ()

    def values(self, scale: str) -> tuple[str, ...]:
        return self.ci + self.full if scale == "full" else self.ci


@dataclass(frozen=True)
class OpSpace:
    family: str
    op: str
    axes: tuple[Axis, ...]
    excludes: tuple[Exclude, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.family}/{self.op}"

    def dimensions(self, scale: str) -> list[Dimension]:
        return [Dimension(a.name, a.values(scale), MASKING & frozenset(a.values(scale))) for a in self.axes]

    def array(self, scale: str) -> CoveringArray:
        """The rows of this profile: pairwise in ``ci``, three-way in ``full``. Excludes naming a
        value the profile lacks are dropped with it."""
        dims = self.dimensions(scale)
        present = {d.name: set(d.values) for d in dims}
        excludes = []
        for e in self.excludes:
            when = {k: v & present[k] for k, v in e.when.items()}
            if all(when.values()):
                excludes.append(Exclude(when, e.why))
        return covering_array(dims, SCALE_STRENGTH[scale], excludes)

    def all_values(self) -> dict[str, tuple[str, ...]]:
        """Every value of every axis (the full profile's): what a coverage map measures against."""
        return {a.name: a.values("full") for a in self.axes}


DTYPE = Axis("dtype", ("float32", "float16", "bfloat16"))
