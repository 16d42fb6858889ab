"""Build progress for people: bars on a terminal, log lines elsewhere.

:func:`indexer.build.build_bundle` reports ``(stage, done, total)`` events (see ``Progress`` there):
``done == 0`` when a stage starts, ``done == total`` when it ends, and intermediate counts where
a stage has them (``parse`` per file, ``embed`` per batch of chunks).  :class:`BuildProgress`
turns them into

* ``mode="bars"`` (stderr is a terminal of known width): one tqdm bar per stage, updated with
  increments so the rate (items/s, averaged since the stage started) and the ETA are tqdm's own; a
  watcher thread refreshes the open bar every second, so the elapsed time moves even in a stage
  that reports no intermediate counts (writing the Whoosh index);
* ``mode="lines"`` (no terminal, a terminal of 0 or unknown width, ``--json``, the worker's
  ``worker.log``): one line when a stage starts, one when it ends (items, seconds, rate), and in
  between a progress line at least every ``interval`` seconds (done/total, percent, rate, ETA; or
  "still running" when the stage reports no counts), each prefixed ``gitrag build:`` and flushed;
* ``mode="off"``: nothing.

Everything goes to the stream given (stderr by default), never to stdout, so ``--json`` output
stays clean.  Rates are measured, not guessed: the ETA of a stage comes from :class:`EtaEstimator`
(a per-item time smoothed over the last few hundred items; once settled it only goes down, unless
the machine got much slower) and is omitted until the first items are done.  When the ``embed``
stage's first small batches and its first full batch are done (:data:`ETA_SETTLE`: 30 chunks or 20 s),
one line says how long
the whole stage should take ("1,015 chunk(s) to embed, about 9 min at the measured rate").
:meth:`BuildProgress.close` with ``outcome`` set (``"interrupted"``, ``"failed"``) reports an
unfinished stage as such, never as "done".
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import Any, Literal, TextIO

UNITS = {"publish_lexical": "bundle", "copy_lexical": "step",
         "load_model": "model", "graph_mapping": "step", "find_base": "step", "parse": "file", "chunk": "doc",
         "resume": "chunk", "embed": "chunk", "text_index": "chunk", "text_commit": "step", "bm25_matrix": "step",
         "vector_index": "vector", "graph": "doc", "publish": "bundle", "lexicons": "language"}
"""Unit of a stage's counts, for display."""

NO_RATE = {"resume"}
"""Stages whose items are not processed one by one (a rate would be meaningless): shown without one."""

LABELS = {"load_model": "loading the embedding model",
          "graph_mapping": "choosing the graph mapping (reads a sample of pages)",
          "find_base": "looking for an ancestor bundle to reuse", "parse": "parsing and chunking Markdown",
          "chunk": "chunking",
          "resume": "embeddings kept from an interrupted build (the store's checkpoint)",
          "embed": "embedding", "text_index": "adding chunks to the BM25 index",
          "text_commit": "writing the BM25 index segment to disk", "bm25_matrix": "writing the BM25 matrix",
          "vector_index": "writing the vector index",
          "graph": "writing the graph", "publish": "verifying and publishing",
          "publish_lexical": "verifying and publishing the BM25-and-graph bundle (searchable before the vectors)",
          "copy_lexical": "copying the BM25 index and graph into the complete bundle",
          "lexicons": "checking the word lexicons of graph questions (written once per machine)"}

ETA_HALF_LIFE = 400
"""Items after which a past item's time counts half in :class:`EtaEstimator`'s rate."""
ETA_SETTLE = (30, 20.0)
"""Items or seconds after which a stage's ETA is settled (and the whole-stage estimate line is written):
from then on it only goes down.  30 items are the small batches of :data:`indexer.build.FIRST_BATCHES`
(2 + 4 + 8) and the first full batch (16): the rate comes from full batches (:class:`EtaEstimator`)."""
ETA_SLACK = (1.5, 30.0)
"""A fresh estimate above ``1.5 x`` the shown ETA ``+ 30 s`` replaces it even when settled: the
machine really got slower, and an ETA stuck far too low helps nobody."""


class EtaEstimator:
    """The remaining seconds of one stage from its ``(done, total)`` reports.

    Rate: seconds per item as exponentially weighted sums of time and items, each report's batch
    weighing ``0.5 ** (items after it / half_life)``: at first the plain average since the stage
    started, later the last few hundred items.  A batch larger than every batch before it restarts
    the sums: a build's small first batches report early but run below the machine's speed (an
    embedding engine parallelises over the batch: on 2 idle cores the batches of 2-8 chunks used one
    core, those of 16 about 1.6, so an estimate from them was 60 % too long), so the rate is that of
    the largest batches seen.  A fresh estimate is ``remaining x seconds per
    item``; with ``weights`` (one per item, in the order the items are done: the characters of
    each embedding input) it is ``remaining weight x seconds per unit of weight``, so a stage whose
    first items are shorter or longer than the rest is not misjudged from them (the rate shown
    stays items per second).  Shown value: the fresh estimate until the stage is settled (:data:`ETA_SETTLE`), then
    the lower of the fresh estimate and the value shown before, unless the fresh one exceeds it by
    ``slack`` (a real slowdown).  It changes only when work is reported (no countdown between
    reports, which would have to jump back up at the next one), so it never grows while work
    advances at about the measured rate.  Measured on simulated noisy builds (tests): within a
    quarter of the real remaining time once settled.
    """

    def __init__(self, half_life: float = ETA_HALF_LIFE, settle: tuple[int, float] = ETA_SETTLE,
                 slack: tuple[float, float] = ETA_SLACK, weights: Sequence[float] | None = None) -> None:
        self.half_life = half_life
        self.settle = settle
        self.slack = slack
        self._cumulative = list(accumulate(weights, initial=0.0)) if weights is not None else None
        self._seconds = 0.0
        self._items = 0.0
        self._work = 0.0
        self._done = 0
        self._largest = 0
        self._start: float | None = None
        self._at: float | None = None
        self._shown: float | None = None
        self.settled = False

    def start(self, now: float) -> None:
        """Mark the start of the stage (``now``: seconds, monotonic)."""
        self._start = self._at = now

    def update(self, done: int, total: int, now: float) -> None:
        """Take a report: ``done`` of ``total`` items at time ``now`` (seconds, monotonic)."""
        if self._at is None or self._start is None:
            self.start(now)
        assert self._at is not None and self._start is not None
        if done <= self._done:
            return
        step = done - self._done
        if step > self._largest:  # a larger batch than any before: the smaller ones do not tell its rate
            self._largest = step
            self._seconds = self._items = self._work = 0.0
        decay = 0.5 ** (step / self.half_life)
        self._seconds = self._seconds * decay + max(0.0, now - self._at)
        self._items = self._items * decay + step
        self._work = self._work * decay + self._work_until(done) - self._work_until(self._done)
        self._done, self._at = done, now
        left = self._work_until(total) - self._work_until(done)
        fresh = max(0.0, left) * (self._seconds / self._work if self._work > 0 else 0.0)
        shown = self._shown
        if shown is None or not self.settled or fresh <= shown or fresh > shown * self.slack[0] + self.slack[1]:
            self._shown = fresh
        self.settled = self.settled or done >= self.settle[0] or now - self._start >= self.settle[1]

    def _work_until(self, done: int) -> float:
        """The work of the first ``done`` items: their summed weights, or ``done`` without weights."""
        if self._cumulative is None:
            return float(done)
        return self._cumulative[min(max(0, done), len(self._cumulative) - 1)]

    def seconds_per_item(self) -> float:
        """The smoothed seconds per item (0 before the first report with progress)."""
        return self._seconds / self._items if self._items else 0.0

    def rate(self) -> float | None:
        """Items per second, or ``None`` before the first report with progress."""
        spi = self.seconds_per_item()
        return 1.0 / spi if spi > 0 else None

    def eta(self, now: float | None = None) -> float | None:
        """Seconds left (as shown), or ``None`` before the first report with progress."""
        return self._shown


def format_seconds(seconds: float) -> str:
    """Return ``"42 s"``, ``"3 min 05 s"`` or ``"1 h 02 min"`` for a duration in seconds."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    minutes, sec = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def terminal_columns(stream: TextIO) -> int:
    """Width in columns of the terminal ``stream`` writes to; 0 when it is no terminal or its size is unknown.

    A pseudo-terminal nobody sized (``script`` run in the background, some CI runners) reports 0
    columns: tqdm then draws nothing at all, so such a stream gets log lines instead of bars.
    """
    try:
        if not stream.isatty():
            return 0
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return 0
    # 0 rows is as unsized as 0 columns: tqdm draws only blank lines there
    return size.columns if size.lines > 0 else 0


class BuildProgress:
    """A ``(stage, done, total)`` callback that shows build progress (see the module docstring).

    Use as a context manager (or call :meth:`close`) so the watcher thread stops and bars close.
    ``clock`` (seconds, monotonic) is injectable for tests.
    """

    def __init__(self, mode: Literal["bars", "lines", "off"], stream: TextIO | None = None,
                 interval: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 prefix: str = "gitrag build: ") -> None:
        self.mode = mode
        self.stream = stream or sys.stderr
        self.interval = interval
        self.clock = clock
        self.prefix = prefix
        self._lock = threading.Lock()
        self._stage: str | None = None
        self._started = 0.0
        self._done = 0
        self._total = 0
        self._last_line = 0.0
        self._bar: Any = None
        self._eta = EtaEstimator()
        self._weights: dict[str, list[float]] = {}  # stage -> its items' weights (:meth:`weigh`)
        self._estimated: set[str] = set()  # stages whose whole-stage estimate line was written
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        if mode != "off":
            self._watcher = threading.Thread(target=self._watch, name="gitrag-progress", daemon=True)
            self._watcher.start()

    @classmethod
    def for_stream(cls, stream: TextIO | None = None, *, quiet: bool = False, interval: float = 10.0) -> BuildProgress:
        """Bars when ``stream`` (default stderr) is a terminal, else log lines; nothing when ``quiet``."""
        stream = stream or sys.stderr
        if quiet:
            return cls("off", stream)
        return cls("bars" if terminal_columns(stream) > 0 else "lines", stream, interval=interval)

    # -- the callback ----------------------------------------------------------------------------

    def __call__(self, stage: str, done: int, total: int) -> None:
        if self.mode == "off":
            return
        with self._lock:
            now = self.clock()
            if stage != self._stage:
                self._end_stage(now)
                self._stage, self._started, self._done, self._total = stage, now, 0, total
                self._start_stage(now)
            self._total = total
            step = max(0, done - self._done)
            self._done = done
            self._eta.update(done, total, now)
            if step and stage == "embed" and stage not in self._estimated and self._eta.settled and done < total:
                self._estimated.add(stage)
                self._write(self._estimate(now))
            if self.mode == "bars" and self._bar is not None:
                self._bar.total = total
                self._set_postfix(now)
                self._bar.update(step)
            elif self.mode == "lines" and done < total and now - self._last_line >= self.interval:
                self._line(self._status(now))
            if done >= total and total > 0:
                self._end_stage(now)

    def weigh(self, stage: str, weights: Sequence[float]) -> None:
        """Give the weights of ``stage``'s items before it starts, in the order they will be done.

        The build gives the ``embed`` stage each input's characters: the time an input takes grows
        with its length, and a repository's first pages (the first batches, which measure the rate)
        are often much shorter or longer than the rest.  The ETA then counts the characters left,
        not the chunks (:class:`EtaEstimator` ``weights``).  Ignored when their number is not the
        stage's total.
        """
        with self._lock:
            self._weights[stage] = [float(w) for w in weights]

    def note(self, text: str) -> None:
        """Write one line of text between the stages' output (above a bar on a terminal)."""
        if self.mode == "off":
            return
        with self._lock:
            self._write(text)

    def close(self, outcome: str | None = None) -> None:
        """End the open stage and stop the watcher thread.

        ``outcome`` (``"interrupted"``, ``"failed"``): the build did not finish, so an open stage
        that has not reached its total is reported with that word and its count, not as "done".
        """
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=2)
        with self._lock:
            self._end_stage(self.clock(), outcome)

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, kind: object, *exc: object) -> None:
        self.close(None if kind is None else "interrupted" if kind is KeyboardInterrupt else "failed")

    # -- internals -------------------------------------------------------------------------------

    def _unit(self, stage: str) -> str:
        return UNITS.get(stage, "item")

    def _start_stage(self, now: float) -> None:
        stage = self._stage or ""
        weights = self._weights.pop(stage, None)
        self._eta = EtaEstimator(weights=weights if weights is not None and len(weights) == self._total else None)
        self._eta.start(now)
        if self.mode == "bars":
            from tqdm import tqdm

            # a rate only where it means something: several items processed one by one; rate and ETA
            # are ours (EtaEstimator, in the postfix), not tqdm's average that drifts between reports
            plain = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + self._unit(stage) + "(s) [{elapsed}]"
            timed = ("{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + self._unit(stage)
                     + "(s) [{elapsed}{postfix}]")
            no_rate = stage in NO_RATE or self._total <= 1
            self._bar = tqdm(total=self._total, desc=f"{stage:<12}", unit=self._unit(stage), file=self.stream,
                             leave=True, smoothing=0, dynamic_ncols=True, mininterval=0.2,
                             bar_format=plain if no_rate else timed)
        else:
            label = LABELS.get(stage, stage)
            self._line(f"{stage}: {label}, {self._total:,} {self._unit(stage)}(s)")

    def _end_stage(self, now: float, outcome: str | None = None) -> None:
        if self._stage is None:
            return
        unfinished = outcome is not None and self._done < self._total
        if self.mode == "bars" and self._bar is not None:
            self._bar.close()
            self._bar = None
            if unfinished:
                self._write(f"{self._stage} {outcome}: {self._done:,}/{self._total:,} {self._unit(self._stage)}(s) "
                            f"after {format_seconds(now - self._started)}")
        elif self.mode == "lines":
            elapsed = now - self._started
            # a rate only where it means something: several items over at least a second
            rate = f", {self._done / elapsed:,.1f} {self._unit(self._stage)}/s" \
                if elapsed >= 1.0 and self._done > 1 and self._stage not in NO_RATE else ""
            if unfinished:
                self._line(f"{self._stage} {outcome}: {self._done:,}/{self._total:,} {self._unit(self._stage)}(s) "
                           f"after {format_seconds(elapsed)}{rate}")
            else:
                self._line(f"{self._stage} done: {self._done:,} {self._unit(self._stage)}(s) in "
                           f"{format_seconds(elapsed)}{rate}")
        self._stage = None

    def _estimate(self, now: float) -> str:
        """The whole-stage estimate written once the first batch is done."""
        unit = self._unit(self._stage or "")
        eta = self._eta.eta(now) or 0.0
        rate = self._eta.rate() or 0.0
        return (f"{self._stage}: {self._total:,} {unit}(s) to embed, about {format_seconds(eta + now - self._started)} "
                f"at the measured rate ({self._done:,} {unit}(s) in {format_seconds(now - self._started)}, "
                f"{rate:,.2f} {unit}/s; refined as it goes)")

    def _set_postfix(self, now: float) -> None:
        eta, rate = self._eta.eta(now), self._eta.rate()
        if self._bar is not None and eta is not None and rate is not None and self._total > 1:
            self._bar.set_postfix_str(f"{rate:,.2f} {self._unit(self._stage or '')}/s, ETA {format_seconds(eta)}",
                                      refresh=False)

    def _write(self, text: str) -> None:
        """One line above the bars (tqdm.write keeps an open bar intact), or a log line."""
        if self.mode == "bars":
            from tqdm import tqdm

            tqdm.write(self.prefix + text, file=self.stream)
        else:  # not a status line: the next one stays due at its time
            self.stream.write(self.prefix + text + "\n")
            self.stream.flush()

    def _status(self, now: float) -> str:
        stage = self._stage or ""
        elapsed = now - self._started
        unit = self._unit(stage)
        rate, eta = self._eta.rate(), self._eta.eta(now)
        if self._done <= 0 or elapsed <= 0 or rate is None or eta is None:
            return f"{stage}: 0/{self._total:,} {unit}(s), running for {format_seconds(elapsed)}"
        pct = 100.0 * self._done / self._total if self._total else 100.0
        return (f"{stage}: {self._done:,}/{self._total:,} {unit}(s) ({pct:.0f}%), {rate:,.1f} {unit}/s, "
                f"ETA {format_seconds(eta)}")

    def _line(self, text: str) -> None:
        self.stream.write(self.prefix + text + "\n")
        self.stream.flush()
        self._last_line = self.clock()

    def _watch(self) -> None:
        tick = 1.0 if self.mode == "bars" else min(1.0, self.interval / 2)
        while not self._stop.wait(tick):
            with self._lock:
                if self._stage is None:
                    continue
                now = self.clock()
                if self.mode == "bars" and self._bar is not None:
                    self._set_postfix(now)
                    self._bar.refresh()
                elif self.mode == "lines" and now - self._last_line >= self.interval:
                    self._line(self._status(now))
