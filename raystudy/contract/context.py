"""What a study's train loop sees: report, checkpoint, device, model and data preparation.

The same loop runs in three places, each with its own context:

* ``LocalContext``: plain Python, no Ray (unit tests, benchmarks, notebooks);
* ``TuneContext``: one process per trial inside a Ray Tune sweep;
* ``TrainContext``: one of N Ray Train workers (DDP) launched by a trial.

Each implements the ``TrialContext`` protocol of ``raystudy.contract.study``.

``map(fn, items)`` fans work out from a trial (evaluation episodes, E-step shards):
Ray tasks inside the trial's own placement group when the trial reserved map slots
(``--map-tasks N``), in-process otherwise, so it can never wait for CPUs that
concurrent trials hold. Results come back in the order of ``items``. ``map_chunks``
splits the items into one contiguous chunk per slot, so a study never chunks by hand.

``cadence(total, eval_every, checkpoint_every)`` owns a loop's rhythm: which steps
evaluate, which evaluations checkpoint, and where a resumed trial starts (the platform
stores the step beside the study's checkpoint state).

``report`` marks a trial as diverged when a reported study metric is NaN or infinite:
the value becomes the worst possible (``inf`` for a minimised metric), ``diverged`` is
set to 1, and ``TrialDiverged`` ends the loop so the sweep can go on.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from raystudy.contract.study import Metric

CHECKPOINT_FILE = "state.pt"
STEP_KEY = "raystudy/step"
"""Where the cadence keeps the checkpointed step inside a checkpoint's state."""


class TrialDiverged(Exception):
    """Raised by ``report`` after a non-finite metric; the platform ends the trial cleanly."""


class MapTaskError(RuntimeError):
    """A ``ctx.map`` call whose function raised on one item; the message names the item."""


def _describe(fn: Callable[..., Any], index: int, item: Any) -> str:
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "func", None), "__name__", "fn")
    text = repr(item)
    return f"{name} failed on item {index} ({text[:80] + '...' if len(text) > 80 else text})"


def map_local(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``[fn(x) for x in items]`` with the failing item named in the error."""
    out = []
    for index, item in enumerate(items):
        try:
            out.append(fn(item))
        except Exception as exc:
            raise MapTaskError(f"{_describe(fn, index, item)}: {exc!r}") from exc
    return out


def _apply(fn: Callable[[Any], Any], item: Any) -> Any:
    """``fn(item)`` as one Ray task: ``fn`` may be any picklable callable (a partial, say)."""
    return fn(item)


def _is_nonfinite(value: Any) -> bool:
    return isinstance(value, float) and not math.isfinite(value)


def mark_divergence(
    metrics: Mapping[str, Any], declared: tuple[Metric, ...]
) -> tuple[dict[str, Any], bool]:
    """Return the metrics with ``diverged`` set, non-finite declared metrics made worst."""
    out = {k: (float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v)
           for k, v in metrics.items()}
    modes = {m.name: m.mode for m in declared}
    diverged = any(_is_nonfinite(out.get(name)) for name in modes)
    if diverged:
        for name, mode in modes.items():
            if _is_nonfinite(out.get(name)):
                out[name] = math.inf if mode == "min" else -math.inf
    out["diverged"] = int(diverged)
    return out, diverged


@dataclass(frozen=True)
class StepCadence:
    """The ``Cadence`` of the contract: steps 1..total; 0 = only at the last step."""

    total: int
    eval_every: int = 0
    checkpoint_every: int = 0
    start: int = 0
    """Steps already done (the checkpointed step of a resumed trial)."""

    def __post_init__(self) -> None:
        if self.total < 0 or self.eval_every < 0 or self.checkpoint_every < 0:
            raise ValueError("cadence: total, eval_every and checkpoint_every must be >= 0")

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.start + 1, self.total + 1))

    def evaluates(self, step: int) -> bool:
        """Step ``step`` (1-based) ends with an evaluation: every ``eval_every``, and last."""
        last = step == self.total
        return last or (self.eval_every > 0 and step % self.eval_every == 0)

    def evaluations(self, step: int) -> int:
        """Evaluations done by the end of step ``step``."""
        every = self.eval_every or self.total
        return step // every + (1 if step == self.total and step % every else 0)

    def checkpoints(self, step: int) -> bool:
        """Step ``step`` checkpoints: every ``checkpoint_every`` evaluations, and last."""
        if not self.evaluates(step):
            return False
        last = step == self.total
        every = self.checkpoint_every
        return last or (every > 0 and self.evaluations(step) % every == 0)


def chunks(items: list[Any], parts: int) -> list[list[Any]]:
    """``items`` cut into at most ``parts`` contiguous, near-equal, non-empty chunks."""
    parts = max(1, min(parts, len(items)))
    size, extra = divmod(len(items), parts)
    out, first = [], 0
    for index in range(parts):
        last = first + size + (1 if index < extra else 0)
        out.append(items[first:last])
        first = last
    return out


class BaseContext:
    """Local single-process behaviour of the ``TrialContext`` protocol; the Ray contexts
    override the hooks."""

    def __init__(
        self,
        metrics: tuple[Metric, ...] = (),
        datasets: Mapping[str, Any] | None = None,
        device: str = "auto",
        map_tasks: int = 0,
        cpus_per_map_task: float = 1.0,
    ) -> None:
        self.metrics = metrics
        self.datasets = dict(datasets or {})
        self._device = device
        self.world_size = 1
        self.rank = 0
        self.map_tasks = map_tasks
        self.cpus_per_map_task = cpus_per_map_task
        self._loaded: tuple[dict[str, Any] | None, int] | None = None
        self._total: int | None = None

    @property
    def slots(self) -> int:
        """How many ``map`` calls run at once: the trial's map slots, 1 without any."""
        return max(1, self.map_tasks)

    def map_chunks(self, fn: Callable[[list[Any]], list[Any]], items: Iterable[Any]) -> list[Any]:
        """``fn`` on one contiguous chunk of ``items`` per slot, the outputs concatenated in
        order: ``fn(chunk)`` returns one result per item of its chunk."""
        items = list(items)
        if not items:
            return []
        return [out for part in self.map(fn, chunks(items, self.slots)) for out in part]

    def cadence(self, total: int, eval_every: int = 0, checkpoint_every: int = 0) -> StepCadence:
        """The loop's rhythm, resumed after the step of the last checkpoint (if any)."""
        self.load_checkpoint()
        start = self._loaded[1] if self._loaded else 0
        self._total = total
        return StepCadence(total, eval_every, checkpoint_every, start=min(start, total))

    def load_checkpoint(self) -> dict[str, Any] | None:
        """The state passed to the last ``report(..., checkpoint=)`` of a resumed run, or None."""
        if self._loaded is None:
            state = self._read_checkpoint()
            step = 0
            if state is not None and STEP_KEY in state:
                state = dict(state)
                step = int(state.pop(STEP_KEY))
            self._loaded = (state, step)
        return self._loaded[0]

    def _read_checkpoint(self) -> dict[str, Any] | None:
        return None

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """``[fn(x) for x in items]``, fanned out to the trial's map slots where it has any.

        ``fn`` must be picklable (a module-level function or a ``functools.partial`` of
        one). A failing item raises ``MapTaskError`` naming it, with the cause chained.
        """
        items = list(items)
        if self.map_tasks < 1 or len(items) < 2:
            return map_local(fn, items)
        return self._map_remote(fn, items)

    def _map_remote(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        return map_local(fn, items)

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def device(self) -> torch.device:
        if self._device != "auto":
            return torch.device(self._device)
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")

    def report(self, metrics: Mapping[str, Any], checkpoint: Mapping[str, Any] | None = None,
               step: int | None = None) -> None:
        """Report metrics (and optionally a checkpoint state); raises TrialDiverged on NaN/inf.

        ``step``: the cadence step this report ends; a checkpoint records it, so a resumed
        cadence starts after it."""
        if step is not None and self._total is not None:  # the trial's own progress
            metrics = {**metrics, "progress/step": step, "progress/total": self._total}
        marked, diverged = mark_divergence(metrics, self.metrics)
        if checkpoint is not None and step is not None:
            checkpoint = {**checkpoint, STEP_KEY: step}
        self._send(marked, checkpoint if not diverged else None)
        if diverged:
            raise TrialDiverged(f"non-finite metric in {dict(metrics)}")

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        return model.to(self.device)

    def dataset(self, name: str) -> Any:
        """A Ray Dataset (or its shard on this worker) supplied by the study's ``datasets`` hook."""
        if name not in self.datasets:
            raise KeyError(f"no dataset '{name}'; the study supplied {sorted(self.datasets)}")
        return self.datasets[name]

    def all_reduce_mean(self, value: float) -> float:
        """Mean of ``value`` over workers (identity with one process)."""
        return value

    def all_reduce_sum(self, value: float) -> float:
        """Sum of ``value`` over workers (identity with one process)."""
        return value

    @property
    def node_id(self) -> str:
        """The Ray node this process runs on ("local" without Ray); every report under Ray
        carries it, so a run shows where each trial ran."""
        return "local"

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        raise NotImplementedError


class LocalContext(BaseContext):
    """No Ray: keeps reports and the last checkpoint in memory."""

    def __init__(self, *args: Any, checkpoint: Mapping[str, Any] | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.reports: list[dict[str, Any]] = []
        self.last_checkpoint = dict(checkpoint) if checkpoint else None
        self._resume_from = self.last_checkpoint

    def _read_checkpoint(self) -> dict[str, Any] | None:
        return self._resume_from

    def _send(self, metrics: dict[str, Any], checkpoint: Mapping[str, Any] | None) -> None:
        self.reports.append(metrics)
        if checkpoint is not None:  # a snapshot, as torch.save makes under Ray
            self.last_checkpoint = copy.deepcopy(dict(checkpoint))
