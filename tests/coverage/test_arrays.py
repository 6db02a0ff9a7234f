"""The covering-array generator: the t-way property, brute-force checked, constraints, determinism."""

from __future__ import annotations

import math
from itertools import combinations

import pytest

from pytest_rocm.coverage.arrays import Dimension, Exclude, covering_array, t_tuples_missing


def dims(*sizes: int) -> list[Dimension]:
    return [Dimension(f"d{i}", tuple(f"v{j}" for j in range(n))) for i, n in enumerate(sizes)]


@pytest.mark.parametrize("sizes", [(3, 3, 3, 3), (2, 5, 3, 4, 2), (4, 4, 4), (6, 2, 2, 2, 2, 2, 3)])
@pytest.mark.parametrize("strength", [1, 2, 3])
def test_every_t_combination_is_in_some_row(sizes: tuple[int, ...], strength: int) -> None:
    space = dims(*sizes)
    array = covering_array(space, strength)
    assert t_tuples_missing(space, array.rows, strength) == []
    assert not array.infeasible
    # far fewer rows than the product, yet at least the largest t-product (each needs its own row)
    largest = max(math.prod(c) for c in combinations(sizes, min(strength, len(sizes))))
    assert largest <= len(array.rows) <= math.prod(sizes)


def test_pairwise_is_much_smaller_than_the_product() -> None:
    space = dims(*([4] * 10))  # 4^10 = 1,048,576 rows in full
    array = covering_array(space, 2)
    assert len(array.rows) <= 36  # the best known is 21, 4^10 = 1,048,576 in full
    # brute force over a million rows is too slow here: count pairs directly
    for a, b in combinations(space, 2):
        held = {(r[a.name], r[b.name]) for r in array.rows}
        assert len(held) == 16, (a.name, b.name)


def test_the_check_sees_a_missing_pair() -> None:
    """The checker itself: drop one row of a pairwise array and it names what is no longer held."""
    space = dims(3, 3, 3)
    rows = covering_array(space, 2).rows
    missing = t_tuples_missing(space, rows[1:], 2)
    assert missing and all(set(m.items()) <= set(rows[0].items()) for m in missing)


def test_excluded_combinations_never_appear_and_the_rest_is_covered() -> None:
    space = [
        Dimension("causal", ("false", "true")),
        Dimension("seq", ("q1_k1", "q7_k9", "q9_k7")),
        Dimension("dtype", ("float32", "float16", "bfloat16")),
        Dimension("mask", ("none", "bool", "float")),
    ]
    excludes = [Exclude({"causal": {"true"}, "mask": {"bool", "float"}}, "SDPA takes a mask or is_causal")]
    array = covering_array(space, 2, excludes)
    assert not any(e.forbids(r) for r in array.rows for e in excludes)
    assert t_tuples_missing(space, array.rows, 2, excludes) == []
    assert array.infeasible == []  # a forbidden pair is not "infeasible": it was never required


def test_a_combination_no_valid_row_can_hold_is_reported() -> None:
    """A pair allowed by itself but impossible in any full row (every completion is forbidden)."""
    space = [Dimension("a", ("0", "1")), Dimension("b", ("0", "1")), Dimension("c", ("0",))]
    excludes = [Exclude({"a": {"1"}, "c": {"0"}})]  # a=1 is impossible, so (a=1, b=*) are too
    array = covering_array(space, 2, excludes)
    assert {"a": "1", "b": "0"} in array.infeasible and {"a": "1", "b": "1"} in array.infeasible
    assert all(r["a"] == "0" for r in array.rows)
    assert t_tuples_missing(space, array.rows, 2, excludes) == []


def test_the_same_dimensions_give_the_same_rows() -> None:
    space = dims(3, 4, 2, 5, 3)
    assert covering_array(space, 3).rows == covering_array(list(space), 3).rows


def test_fewer_dimensions_than_strength_is_the_full_product() -> None:
    space = dims(2, 3)
    assert len(covering_array(space, 3).rows) == 6


@pytest.mark.parametrize(
    ("space", "excludes", "message"),
    [
        (dims(2, 2) + dims(2), [], "repeat"),
        (dims(2, 2), [Exclude({"nope": {"v0"}})], "unknown dimension 'nope'"),
        (dims(2, 2), [Exclude({"d0": {"v9"}})], "has no value 'v9'"),
    ],
)
def test_bad_dimensions_are_named(space: list[Dimension], excludes: list[Exclude], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        covering_array(space, 2, excludes)


def test_a_dimension_needs_distinct_values() -> None:
    with pytest.raises(ValueError, match="repeats a value"):
        Dimension("x", ("a", "a"))
    with pytest.raises(ValueError, match="no values"):
        Dimension("x", ())


def isolating(sizes: tuple[int, ...], isolated: dict[int, set[str]]) -> list[Dimension]:
    return [
        Dimension(f"d{i}", tuple(f"v{j}" for j in range(n)), frozenset(isolated.get(i, set())))
        for i, n in enumerate(sizes)
    ]


@pytest.mark.parametrize("strength", [2, 3])
def test_an_isolated_value_covers_only_combinations_that_include_it(strength: int) -> None:
    """A NaN input masks every other fault of its row: the pairs of the other dimensions must also
    appear in rows without it."""
    space = isolating((3, 3, 4, 2), {2: {"v2", "v3"}})
    array = covering_array(space, strength)
    assert t_tuples_missing(space, array.rows, strength) == []
    plain = [r for r in array.rows if r["d2"] not in ("v2", "v3")]
    for a, b in combinations(["d0", "d1", "d3"], 2):  # every pair of the others without an isolated value
        assert {(r[a], r[b]) for r in plain} == {
            (x, y) for x in space[int(a[1])].values for y in space[int(b[1])].values
        }


def test_the_check_counts_a_pair_held_only_beside_an_isolated_value_as_missing() -> None:
    space = isolating((2, 2, 2), {2: {"v1"}})
    rows = [{"d0": a, "d1": b, "d2": "v1"} for a in ("v0", "v1") for b in ("v0", "v1")]
    rows += [{"d0": "v0", "d1": "v0", "d2": "v0"}]
    missing = t_tuples_missing(space, rows, 2)
    assert {"d0": "v1", "d1": "v1"} in missing and {"d0": "v0", "d1": "v0"} not in missing


def test_an_isolated_value_must_be_a_value() -> None:
    with pytest.raises(ValueError, match="isolated value 'nan'"):
        Dimension("x", ("a", "b"), frozenset({"nan"}))
