"""A run's progress on stderr: a live bar on a terminal, a line every so often without one."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Mapping

from hce.errors import CollectError


class ProgressBar:
    """A rich progress bar on stderr: done/total, errors, spend, ETA."""

    def __init__(self, total: int, retried: int = 0):
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn(f"judging ({retried:,} failed calls again)" if retried else "judging"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("flagged {task.fields[flagged]}, failed calls {task.fields[failed]}"),
            TextColumn("${task.fields[spend]:.4f}"),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self.task = self.progress.add_task("judging", total=total, flagged=0, failed=0, spend=0.0)

    def start(self) -> None:
        self.progress.start()

    def update(self, counts: Mapping[str, float]) -> None:
        self.progress.update(self.task, completed=counts["done"], flagged=flagged(counts), failed=int(counts.get("failed", 0)),
                             spend=counts["cost"])

    def stop(self) -> None:
        self.progress.stop()


def flagged(counts: Mapping[str, float]) -> int:
    """Replies that came back but were flagged (unparsable, cut off): the errors that are not failed calls."""
    return int(counts["errors"]) - int(counts.get("failed", 0))


class ProgressLines:
    """Progress without a terminal: one line on stderr every ``every`` seconds, and one at the end.

    A live bar draws nothing when stderr is a file or a pipe (nohup, CI, a scheduler), so a
    long run would print nothing between its start and its end. Each line is complete
    and flushed, so ``tail -f`` on the redirected output follows the run.

    Examples
    --------
    >>> lines = ProgressLines(total=200, every=30)
    >>> lines.update({"done": 50, "errors": 3, "failed": 1, "cost": 0.125})
    >>> lines.line(elapsed=60.0)
    'progress: 50/200 done (25%), 2 flagged replies, 1 failed calls, $0.1250 spent, 0:01:00 elapsed, ETA 0:03:00'
    """

    def __init__(self, total: int, every: float):
        if not every > 0:
            raise CollectError(f"progress_every must be > 0 seconds, got {every!r}")
        self.total, self.every = total, float(every)
        self.counts: Mapping[str, float] = {"done": 0, "errors": 0, "failed": 0, "cost": 0.0}
        self.started = time.monotonic()
        self.task: asyncio.Task[None] | None = None

    def line(self, elapsed: float | None = None) -> str:
        elapsed = time.monotonic() - self.started if elapsed is None else elapsed
        done = int(self.counts["done"])
        eta = clock(elapsed / done * (self.total - done)) if done else "unknown"
        return (
            f"progress: {done:,}/{self.total:,} done ({done / self.total:.0%}), {flagged(self.counts):,} flagged replies, "
            f"{int(self.counts.get('failed', 0)):,} failed calls, "
            f"${self.counts['cost']:,.4f} spent, {clock(elapsed)} elapsed, ETA {eta}"
        )

    def start(self) -> None:
        self.started = time.monotonic()
        self.task = asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(self.every)
            print(self.line(), file=sys.stderr, flush=True)

    def update(self, counts: Mapping[str, float]) -> None:
        self.counts = dict(counts)

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        print(self.line(), file=sys.stderr, flush=True)


def clock(seconds: float) -> str:
    """Seconds as h:mm:ss."""
    whole = int(round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def progress_display(total: int, retried: int, every: float) -> ProgressBar | ProgressLines:
    """A live bar when stderr is a terminal, else a line every ``every`` seconds (:class:`ProgressLines`)."""
    return ProgressBar(total, retried) if sys.stderr.isatty() else ProgressLines(total, every)
