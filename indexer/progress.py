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
stays clean.  Rates are measured, not guessed: the ETA is ``remaining / (done / elapsed)`` of the
current stage and is omitted until something is done.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any, Literal, TextIO

UNITS = {"load_model": "model", "graph_mapping": "step", "find_base": "step", "parse": "file", "chunk": "doc",
         "resume": "chunk", "embed": "chunk", "text_index": "chunk", "text_commit": "step", "bm25_matrix": "step",
         "vector_index": "vector", "graph": "doc", "publish": "bundle"}
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
          "graph": "writing the graph", "publish": "verifying and publishing"}


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
            if self.mode == "bars" and self._bar is not None:
                self._bar.total = total
                self._bar.update(step)
            elif self.mode == "lines" and done < total and now - self._last_line >= self.interval:
                self._line(self._status(now))
            if done >= total and total > 0:
                self._end_stage(now)

    def close(self) -> None:
        """End the open stage and stop the watcher thread."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=2)
        with self._lock:
            self._end_stage(self.clock())

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals -------------------------------------------------------------------------------

    def _unit(self, stage: str) -> str:
        return UNITS.get(stage, "item")

    def _start_stage(self, now: float) -> None:
        stage = self._stage or ""
        if self.mode == "bars":
            from tqdm import tqdm

            # a rate only where it means something: several items processed one by one
            plain = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} " + self._unit(stage) + "(s) [{elapsed}]"
            no_rate = stage in NO_RATE or self._total <= 1
            self._bar = tqdm(total=self._total, desc=f"{stage:<12}", unit=self._unit(stage), file=self.stream,
                             leave=True, smoothing=0, dynamic_ncols=True, mininterval=0.2,
                             bar_format=plain if no_rate else None)
        else:
            label = LABELS.get(stage, stage)
            self._line(f"{stage}: {label}, {self._total:,} {self._unit(stage)}(s)")

    def _end_stage(self, now: float) -> None:
        if self._stage is None:
            return
        if self.mode == "bars" and self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self.mode == "lines":
            elapsed = now - self._started
            # a rate only where it means something: several items over at least a second
            rate = f", {self._done / elapsed:,.1f} {self._unit(self._stage)}/s" \
                if elapsed >= 1.0 and self._done > 1 and self._stage not in NO_RATE else ""
            self._line(f"{self._stage} done: {self._done:,} {self._unit(self._stage)}(s) in "
                       f"{format_seconds(elapsed)}{rate}")
        self._stage = None

    def _status(self, now: float) -> str:
        stage = self._stage or ""
        elapsed = now - self._started
        unit = self._unit(stage)
        if self._done <= 0 or elapsed <= 0:
            return f"{stage}: 0/{self._total:,} {unit}(s), running for {format_seconds(elapsed)}"
        rate = self._done / elapsed
        eta = (self._total - self._done) / rate
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
                    self._bar.refresh()
                elif self.mode == "lines" and now - self._last_line >= self.interval:
                    self._line(self._status(now))
