"""Growth checks shared by the tests that time a path at two sizes (never absolute times)."""

from __future__ import annotations

from collections.abc import Callable


def assert_linear_growth(cost: Callable[[int], float], n: int) -> None:
    """``cost(4 * n)`` is at most 6x ``cost(n)`` (linear is 4x, quadratic 16x).

    ``cost`` should return the CPU time the call took (``time.process_time``, all of this
    process's threads): on a shared machine, wall time also counts the other processes
    that run meanwhile, and two cores shared by three builds made linear paths look 7-9x.

    Small and large calls alternate (so drift on a shared machine hits both) and each side keeps
    its fastest of five. One comparison of milliseconds-long calls can still lose to noise, so a
    failing comparison is measured again, up to three times; a quadratic path (16x) fails all.
    """
    cost(n // 10)  # warm up
    ratios: list[float] = []
    for _ in range(3):
        small, large = float("inf"), float("inf")
        for _ in range(5):
            small = min(small, cost(n))
            large = min(large, cost(4 * n))
        ratios.append(large / small)
        if ratios[-1] <= 6:
            return
    raise AssertionError(f"4x the input cost {', '.join(f'{r:.1f}x' for r in ratios)} the time")
