"""Task streams: what each task contains, and that tasks are reproducible by index."""

from __future__ import annotations

import pytest
import torch

from raystudy.algorithms.plasticity.streams import (
    ImageData,
    class_order,
    incremental_tasks,
    stream_task,
)


def toy_data(n_train=60, n_test=30, classes=6) -> ImageData:
    g = torch.Generator().manual_seed(0)
    return ImageData(torch.rand(n_train, 1, 3, 3, generator=g),
                     torch.arange(n_train) % classes,
                     torch.rand(n_test, 1, 3, 3, generator=g),
                     torch.arange(n_test) % classes, classes, "toy")


def test_permuted_tasks_apply_one_pixel_permutation_to_train_and_test():
    data = toy_data()
    task = stream_task("permuted", data, 3, seed=1)
    flat_train, flat_task = data.x_train.reshape(60, -1), task.x_train.reshape(60, -1)
    # the permutation is recoverable from one image and holds for every image and the test set
    perm = [int((flat_train[0] == v).nonzero()[0]) for v in flat_task[0]]
    assert sorted(perm) == list(range(9)) and perm != list(range(9))
    assert torch.equal(flat_task, flat_train[:, perm])
    assert torch.equal(task.x_eval.reshape(30, -1), data.x_test.reshape(30, -1)[:, perm])
    assert torch.equal(task.y_train, data.y_train) and task.active == 6
    again = stream_task("permuted", data, 3, seed=1)
    other = stream_task("permuted", data, 4, seed=1)
    assert torch.equal(again.x_train, task.x_train)
    assert not torch.equal(other.x_train, task.x_train)
    assert len(stream_task("permuted", data, 0, seed=1, examples=20).x_train) == 20


def test_random_label_tasks_keep_the_images_and_redraw_the_labels():
    data = toy_data()
    a = stream_task("random_labels", data, 0, seed=2, examples=40)
    b = stream_task("random_labels", data, 1, seed=2, examples=40)
    assert torch.equal(a.x_train, b.x_train) and len(a.x_train) == 40
    assert not torch.equal(a.y_train, b.y_train)
    assert a.eval_is_train and torch.equal(a.x_eval, a.x_train)
    assert int(a.y_train.min()) >= 0 and int(a.y_train.max()) < 6
    # the images are real training rows
    rows = [int(((data.x_train - x).abs().sum((1, 2, 3)) == 0).nonzero()[0]) for x in a.x_train]
    assert len(set(rows)) == 40


def test_incremental_tasks_add_classes_in_a_fixed_order_with_renumbered_labels():
    data = toy_data()
    order = class_order(data, seed=3).tolist()
    assert incremental_tasks(6, 4) == 2 and incremental_tasks(6, 2) == 3
    for t in range(3):
        task = stream_task("incremental", data, t, seed=3, classes_per_task=2)
        assert task.active == 2 * (t + 1)
        seen = order[: 2 * (t + 1)]
        assert len(task.x_train) == 10 * len(seen) and len(task.x_eval) == 5 * len(seen)
        assert set(task.y_train.tolist()) == set(range(task.active))
        # renumbered label k is original class order[k]
        for x, y in zip(task.x_train, task.y_train, strict=True):
            row = int(((data.x_train - x).abs().sum((1, 2, 3)) == 0).nonzero()[0])
            assert int(data.y_train[row]) == order[int(y)]


def test_unknown_stream():
    with pytest.raises(ValueError, match="unknown stream 'rotated'"):
        stream_task("rotated", toy_data(), 0, 0)
