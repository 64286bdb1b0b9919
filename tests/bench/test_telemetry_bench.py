"""The telemetry benchmark's confidence interval of a median (benchmarks/telemetry.py)."""

from __future__ import annotations

import random

from benchmarks.telemetry import median_interval


def test_the_median_interval_of_21_rounds_is_their_6th_and_16th_values() -> None:
    # the textbook ranks for n = 21 at 95%: P(Binomial(21, 1/2) <= 5) = 0.013, <= 6: 0.039
    values = [float(v) for v in range(100, 121)]
    random.Random(3).shuffle(values)
    assert median_interval(values) == (105.0, 115.0)


def test_the_median_interval_narrows_as_the_rounds_grow() -> None:
    rng = random.Random(7)
    few = [rng.gauss(1.06, 0.05) for _ in range(21)]
    many = [rng.gauss(1.06, 0.05) for _ in range(336)]
    width = lambda interval: interval[1] - interval[0]  # noqa: E731
    assert width(median_interval(many)) < width(median_interval(few)) / 2
    low, high = median_interval(many)
    assert low < 1.06 < high


def test_too_few_rounds_for_any_interval_give_the_whole_range() -> None:
    # 5 values: even (min, max) covers the median with only 1 - 2/32 = 94% < 95%
    assert median_interval([3.0, 1.0, 2.0, 5.0, 4.0]) == (1.0, 5.0)
    assert median_interval([2.0]) == (2.0, 2.0)
