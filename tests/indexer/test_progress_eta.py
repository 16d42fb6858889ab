"""An ETA a person can trust: measured from small first batches, smoothed, never growing while work
advances at about the measured rate, a whole-stage estimate before the bulk of the embedding, and
"interrupted" (not "done") when a build is stopped.  The clock is injected; the arithmetic is real."""

from __future__ import annotations

import io
import random

import pytest

from indexer.build import batch_sizes
from indexer.progress import BuildProgress, EtaEstimator


def _run(total: int, seconds_per_item, seed: int = 0):  # type: ignore[no-untyped-def]
    """Feed an estimator batches as a build makes them; return [(done, shown ETA, true remaining s)]."""
    rng = random.Random(seed)
    times, now, item = [], 0.0, 0
    for size in batch_sizes(total):
        now += sum(seconds_per_item(item + i, rng) for i in range(size))
        item += size
        times.append((size, now))
    eta, done, rows = EtaEstimator(), 0, []
    eta.start(0.0)
    end = times[-1][1]
    for size, at in times:
        done += size
        eta.update(done, total, at)
        rows.append((done, eta.eta(at), end - at))
    return rows


def test_steady_rate_first_estimate_after_seconds_and_accurate() -> None:
    rows = _run(1015, lambda i, rng: 0.5)  # 2 chunks/s
    done, shown, true = rows[0]
    assert done == 2 and abs(shown - true) / true < 0.01  # after the first 2 chunks (1 s), right
    assert all(abs(s - t) <= 0.01 * t + 0.01 for _, s, t in rows)


@pytest.mark.parametrize("seed", range(5))
def test_noisy_rate_never_grows_once_settled_and_stays_within_a_quarter(seed: int) -> None:
    rows = _run(1200, lambda i, rng: 0.5 * rng.uniform(0.6, 1.4), seed=seed)
    settled = [(d, s, t) for d, s, t in rows if d >= 14]  # after the first small batches (7 s here)
    assert all(b[1] <= a[1] for a, b in zip(settled, settled[1:], strict=False))  # never grows as work advances
    for done, s, true in settled:
        assert abs(s - true) <= 0.25 * true + 10, (done, s, true)


def test_a_real_slowdown_raises_the_estimate() -> None:
    rows = _run(1000, lambda i, rng: 0.5 if i < 300 else 2.0)  # the machine gets 4x busier
    at_300 = next(s for d, s, _ in rows if d >= 300)
    after = [(s, t) for d, s, t in rows if d > 300]
    assert max(s for s, _ in after) > 1.5 * at_300  # honest: it grows when the rate really changed
    assert all(abs(s - t) <= 0.25 * t + 10 for s, t in after[len(after) // 2:])


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_an_estimate_line_before_the_bulk_and_interrupted_not_done() -> None:
    out, clock = io.StringIO(), _Clock()
    progress = BuildProgress("lines", out, clock=clock)
    progress._stop.set()
    progress("embed", 0, 1015)
    done = 0
    for size in batch_sizes(1015)[:4]:  # 2, 4, 8, 16 chunks at 2 chunks/s
        clock.now += size / 2
        done += size
        progress("embed", done, 1015)
        if done == 6:
            assert len(out.getvalue().splitlines()) == 1  # no estimate from 6 chunks in 3 s yet
    progress.close("interrupted")
    lines = out.getvalue().splitlines()
    assert lines[1] == ("gitrag build: embed: 1,015 chunk(s) to embed, about 8 min 28 s at the measured rate "
                        "(14 chunk(s) in 7.0 s, 2.00 chunk/s; refined as it goes)")
    assert lines[-1].startswith("gitrag build: embed interrupted: 30/1,015 chunk(s) after 15 s")
    assert not any("embed done" in line for line in lines)
