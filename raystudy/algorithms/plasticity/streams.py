"""Continual supervised task streams built from one labelled image set.

Task ``t`` of a stream is a deterministic function of ``(data, seed, t)``, so a run that
resumes at task ``t`` sees exactly the tasks an uninterrupted run would.

* ``permuted`` (Goodfellow et al. 2013; Dohare et al. 2024): a new fixed permutation of
  the input features per task; train on the (permuted) training split, evaluate on the
  permuted test split. Labels are the true ones.
* ``random_labels`` (Lyle et al. 2022; Kumar et al. 2023): the same ``examples`` training
  images every task, labels redrawn uniformly per task; the score is how much of that
  task the network memorises (training accuracy).
* ``incremental`` (Dohare et al.'s class-incremental CIFAR): classes arrive in a fixed
  random order, ``classes_per_task`` at a time; task ``t`` trains on every class seen so
  far and is evaluated on their test images. Labels are renumbered in arrival order, so
  the ``active`` classes are the first ``(t+1) * classes_per_task`` logits (the loss and
  the prediction mask the others).

Shapes: ``x_*`` is ``n x ...`` float (pixels in [0, 1]), ``y_*`` is ``n`` int64.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from .interventions import derive_seed

STREAMS = ("permuted", "random_labels", "incremental")


@dataclass
class ImageData:
    """A labelled image set: train and test splits and the number of classes."""

    x_train: Tensor
    y_train: Tensor
    x_test: Tensor
    y_test: Tensor
    classes: int
    name: str = ""


@dataclass
class Task:
    """One task: what to train on, what to score on, and how many logits are active."""

    index: int
    x_train: Tensor
    y_train: Tensor
    x_eval: Tensor
    y_eval: Tensor
    active: int
    eval_is_train: bool = False

    def to(self, device: torch.device | str) -> Task:
        move = {k: getattr(self, k).to(device) for k in ("x_train", "y_train", "x_eval", "y_eval")}
        return Task(self.index, **move, active=self.active, eval_is_train=self.eval_is_train)


def _generator(seed: int, task: int, purpose: int) -> torch.Generator:
    return torch.Generator().manual_seed(derive_seed(seed, task, purpose))


def permuted_task(data: ImageData, task: int, seed: int, examples: int = 0) -> Task:
    """Task ``task`` of Permuted-X: all (or ``examples`` random) training images, permuted."""
    g = _generator(seed, task, 10)
    features = data.x_train[0].numel()
    perm = torch.randperm(features, generator=g)
    n = len(data.x_train)
    rows = torch.randperm(n, generator=g)[:examples] if 0 < examples < n else torch.arange(n)

    def permute(x: Tensor) -> Tensor:
        return x.reshape(len(x), -1)[:, perm].reshape(x.shape)

    return Task(task, permute(data.x_train[rows]), data.y_train[rows], permute(data.x_test),
                data.y_test, data.classes)


def random_label_task(data: ImageData, task: int, seed: int, examples: int = 512) -> Task:
    """The same ``examples`` images every task (fixed by ``seed``), labels redrawn per task."""
    n = min(examples, len(data.x_train)) if examples > 0 else len(data.x_train)
    rows = torch.randperm(len(data.x_train), generator=_generator(seed, 0, 11))[:n]
    labels = torch.randint(0, data.classes, (n,), generator=_generator(seed, task, 12))
    x = data.x_train[rows]
    return Task(task, x, labels, x, labels, data.classes, eval_is_train=True)


def class_order(data: ImageData, seed: int) -> Tensor:
    """The arrival order of the classes (a permutation fixed by ``seed``)."""
    return torch.randperm(data.classes, generator=_generator(seed, 0, 13))


def incremental_task(data: ImageData, task: int, seed: int, classes_per_task: int = 2) -> Task:
    """Every class seen by task ``task``, labels renumbered in arrival order."""
    active = min(data.classes, (task + 1) * classes_per_task)
    rank = torch.empty(data.classes, dtype=torch.long)
    rank[class_order(data, seed)] = torch.arange(data.classes)

    def select(x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        new = rank[y]
        keep = new < active
        return x[keep], new[keep]

    x_train, y_train = select(data.x_train, data.y_train)
    x_eval, y_eval = select(data.x_test, data.y_test)
    return Task(task, x_train, y_train, x_eval, y_eval, active)


def stream_task(kind: str, data: ImageData, task: int, seed: int, examples: int = 0,
                classes_per_task: int = 2) -> Task:
    """Task ``task`` of the stream ``kind`` (one of ``STREAMS``)."""
    if kind == "permuted":
        return permuted_task(data, task, seed, examples)
    if kind == "random_labels":
        return random_label_task(data, task, seed, examples or 512)
    if kind == "incremental":
        return incremental_task(data, task, seed, classes_per_task)
    raise ValueError(f"unknown stream {kind!r}; choose one of {', '.join(STREAMS)}")


def incremental_tasks(classes: int, classes_per_task: int) -> int:
    """How many tasks a class-incremental stream has before every class has arrived."""
    return -(-classes // classes_per_task)
