"""Dataset readers on files written here in the real formats (IDX, CIFAR python pickles)."""

from __future__ import annotations

import gzip
import pickle

import numpy as np
import pytest
import torch

from raystudy.algorithms.plasticity.data import (
    DataFormatError,
    check_image_data,
    load_image_data,
    read_idx,
)


def write_idx(path, array: np.ndarray, compress: bool = False) -> None:
    header = bytes([0, 0, 0x08, array.ndim]) + b"".join(
        int(n).to_bytes(4, "big") for n in array.shape)
    data = header + array.astype(np.uint8).tobytes()
    if compress:
        with gzip.open(str(path) + ".gz", "wb") as handle:
            handle.write(data)
    else:
        path.write_bytes(data)


def fake_mnist(folder, n_train=12, n_test=5, compress=False):
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    train = rng.integers(0, 256, (n_train, 28, 28))
    write_idx(folder / "train-images-idx3-ubyte", train, compress)
    write_idx(folder / "train-labels-idx1-ubyte", np.arange(n_train) % 10, compress)
    write_idx(folder / "t10k-images-idx3-ubyte", rng.integers(0, 256, (n_test, 28, 28)),
              compress)
    write_idx(folder / "t10k-labels-idx1-ubyte", np.arange(n_test) % 10, compress)
    return train


def test_digits_is_offline_and_split_500_test():
    data = load_image_data("digits")
    assert data.x_train.shape == (1297, 64) and data.x_test.shape == (500, 64)
    assert float(data.x_train.max()) == 1.0 and data.classes == 10


@pytest.mark.parametrize("compress", [False, True])
def test_mnist_reads_plain_and_gzipped_idx_files_in_the_torchvision_layout(tmp_path, compress):
    train = fake_mnist(tmp_path / "MNIST" / "raw", compress=compress)
    check_image_data("mnist", str(tmp_path))
    data = load_image_data("mnist", str(tmp_path))
    assert data.x_train.shape == (12, 784) and data.x_test.shape == (5, 784)
    assert torch.allclose(data.x_train[3], torch.tensor(train[3].reshape(-1) / 255,
                                                        dtype=torch.float32))
    assert data.y_train.tolist() == [i % 10 for i in range(12)]


def test_mnist_errors_name_the_files(tmp_path):
    with pytest.raises(DataFormatError, match="MNIST needs train-images-idx3-ubyte, "
                                              "train-labels-idx1-ubyte"):
        check_image_data("mnist", str(tmp_path))
    with pytest.raises(DataFormatError, match="no such folder"):
        check_image_data("mnist", str(tmp_path / "nowhere"))
    fake_mnist(tmp_path)
    (tmp_path / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x09\x01" + bytes(8))
    with pytest.raises(DataFormatError, match="t10k-labels-idx1-ubyte: not an IDX file"):
        check_image_data("mnist", str(tmp_path))
    write_idx(tmp_path / "t10k-labels-idx1-ubyte", np.arange(7) % 10)  # 5 images, 7 labels
    with pytest.raises(DataFormatError, match="t10k images"):
        check_image_data("mnist", str(tmp_path))
    with pytest.raises(DataFormatError, match="bytes of data for shape"):
        path = tmp_path / "short"
        path.write_bytes(bytes([0, 0, 8, 3]) + (4).to_bytes(4, "big") * 3 + bytes(10))
        read_idx(path)
    broken = tmp_path / "broken.gz"  # a gzip header, then an invalid deflate block (zlib.error)
    broken.write_bytes(gzip.compress(bytes(2000))[:10] + b"\x07" + bytes(40))
    with pytest.raises(DataFormatError, match="broken.gz: unreadable"):
        read_idx(broken)


def write_cifar(path, n, classes, label_key=b"labels", dtype=np.uint8, width=3072):
    rng = np.random.default_rng(1)
    batch = {b"data": rng.integers(0, 256, (n, width)).astype(dtype),
             label_key: list(rng.integers(0, classes, n))}
    path.write_bytes(pickle.dumps(batch))
    return batch


def test_cifar10_and_cifar100_read_the_python_pickles(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    first = write_cifar(folder / "data_batch_1", 4, 10)
    for i in range(2, 6):
        write_cifar(folder / f"data_batch_{i}", 4, 10)
    write_cifar(folder / "test_batch", 3, 10)
    check_image_data("cifar10", str(tmp_path))
    data = load_image_data("cifar10", str(tmp_path))
    assert data.x_train.shape == (20, 3, 32, 32) and data.x_test.shape == (3, 3, 32, 32)
    assert torch.allclose(data.x_train[0, 1], torch.tensor(
        first[b"data"][0, 1024:2048].reshape(32, 32) / 255, dtype=torch.float32))
    hundred = tmp_path / "c100" / "cifar-100-python"
    hundred.mkdir(parents=True)
    write_cifar(hundred / "train", 6, 100, b"fine_labels")
    write_cifar(hundred / "test", 2, 100, b"fine_labels")
    assert load_image_data("cifar100", str(tmp_path / "c100")).classes == 100


def test_cifar_errors_name_the_file_and_the_expectation(tmp_path):
    with pytest.raises(DataFormatError, match="cifar10 needs cifar-10-batches-py/ with "
                                              "data_batch_1"):
        check_image_data("cifar10", str(tmp_path))
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        write_cifar(tmp_path / name, 2, 10, width=1024)  # grey 32x32: the wrong shape
    with pytest.raises(DataFormatError, match="data_batch_1: expected b'data' uint8 n x 3072"):
        check_image_data("cifar10", str(tmp_path))
    (tmp_path / "data_batch_1").write_bytes(b"not a pickle")
    with pytest.raises(DataFormatError, match="data_batch_1: not a CIFAR python pickle"):
        check_image_data("cifar10", str(tmp_path))
