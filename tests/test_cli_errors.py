"""The one-line, exit-2 promise for flags, spaces, data files, paths and resources.

Each case is a mistake a user can make; each ends with exactly one ``raystudy: error:``
line on stderr, exit code 2, before Ray starts, and leaves no run folder or temp file.
"""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from raystudy.cli import main


def cli(argv, capsys) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse
        code = exc.code
    err = capsys.readouterr().err
    return code, err


def assert_one_line(code, err, *fragments):
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("raystudy: error:"), err
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


@pytest.mark.parametrize("argv,fragment", [
    (["run", "optimizer_robustness", "--workers", "1", "--cpus-per-worker", "-1"],
     "argument --cpus-per-worker: -1 must be >= 0"),
    (["sweep", "optimizer_robustness", "--trial-retries", "-1"],
     "argument --trial-retries: -1 must be in [0, 100]"),
    (["sweep", "optimizer_robustness", "--samples", "0"], "--samples: 0 must be >= 1"),
    (["sweep", "optimizer_robustness", "--max-concurrent", "zero"], "'zero' is not an integer"),
    (["run", "optimizer_robustness", "--workers", "-2"], "--workers: -2 must be >= 0"),
    (["run", "optimizer_robustness", "--map-tasks", "-1"], "--map-tasks: -1 must be >= 0"),
    (["run", "optimizer_robustness", "--connect-timeout", "0"], "--connect-timeout: 0 must be"),
    (["data", "make-anndata", "/tmp/x", "--cells", "10", "--genes", "5", "--density", "0"],
     "--density: 0 must be in"),
    (["data", "make-tokens", "/tmp/x", "--seq-len", "1"], "--seq-len: 1 must be >= 2"),
    (["run", "optimizer_robustness", "--no-such-flag"], "unrecognized arguments"),
])
def test_flags_are_range_checked_at_parse_time(argv, fragment, capsys):
    assert_one_line(*cli(argv, capsys), fragment)


@pytest.mark.parametrize("spec,fragment", [
    ("{uniform: [0.1, 0.001]}", "uniform needs lo < hi, got [0.1, 0.001]"),
    ("{loguniform: [0, 0.1]}", "loguniform needs lo > 0"),
    ("{loguniform: [1e-4, 1e-1]}", None),  # YAML reads these as strings: accepted
    ("{uniform: [a, 1]}", "bounds must be numbers"),
])
def test_space_bounds_are_checked_and_leave_no_run_folder(spec, fragment, tmp_path, capsys,
                                                          monkeypatch):
    space = tmp_path / "space.yaml"
    space.write_text(f"params:\n  optimizer.lr: {spec}\n")
    storage = tmp_path / "runs"
    if fragment is None:  # valid: stop it at the resource check instead of running it
        monkeypatch.setenv("RAYSTUDY_MIN_FREE_MB", "1e12")
        fragment = "only"
    code, err = cli(["sweep", "optimizer_robustness", "--space", str(space), "--search",
                     "random", "--storage", str(storage)], capsys)
    assert_one_line(code, err, fragment)
    assert not storage.exists() or not any(storage.iterdir())


def test_randint_bounds(tmp_path, capsys):
    for spec, fragment in (("[5, 1]", "randint needs lo < hi"),
                           ("[0.5, 3]", "randint needs integer bounds")):
        space = tmp_path / "space.yaml"
        space.write_text(f"params:\n  train.seed: {{randint: {spec}}}\n")
        assert_one_line(*cli(["sweep", "optimizer_robustness", "--space", str(space),
                              "--storage", str(tmp_path / "runs")], capsys), fragment)


@pytest.mark.parametrize("argv,fragment", [
    (["run", "optimizer_robustness", "--workers", "1", "--gpus-per-worker", "1"],
     "GPU 1 in one place, but no node of this machine (embedded Ray)"),
    (["run", "optimizer_robustness", "--map-tasks", "8"], "CPU 9 in all"),
    (["run", "optimizer_robustness", "--set", "train.batch_size=100000000"],
     "a trial needs about"),
    (["run", "optimizer_robustness", "--name", "../outside"], "one folder name inside --storage"),
    (["run", "optimizer_robustness", "--name", "/abs/path"], "one folder name inside --storage"),
    (["run", "optimizer_robustness", "--address", "http://127.0.0.1:8265"], "dashboard URL"),
])
def test_requests_that_can_never_run_are_refused_before_ray(argv, fragment, tmp_path, capsys):
    storage = tmp_path / "runs"
    assert_one_line(*cli([*argv, "--storage", str(storage)], capsys), fragment)
    assert not storage.exists()


def test_address_where_no_ray_listens(tmp_path, capsys):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    assert_one_line(*cli(["run", "optimizer_robustness", "--address", address,
                          "--connect-timeout", "1", "--storage", str(tmp_path)], capsys),
                    f"no Ray cluster answers at {address} within 1 s")


def tokens_case(tmp_path, train):
    folder = tmp_path / "tokens"
    folder.mkdir()
    good = np.zeros((64, 65), np.uint16)
    for name, array in (("train", train), ("val", good)):
        path = folder / f"{name}.npy"
        if isinstance(array, bytes):
            path.write_bytes(array)
        else:
            np.save(path, array)
    return folder


@pytest.mark.parametrize("make,fragment", [
    (lambda: np.zeros(1000, np.uint16), "expected a 2-D array n_sequences x (seq_len + 1)"),
    (lambda: np.full((64, 65), 300, np.uint16), "token id 300 outside [0, model.vocab_size=256)"),
    (lambda: b"not a numpy file at all" * 20, "not a readable .npy array"),
    (lambda: np.zeros((64, 65), np.float32), "expected integer token ids (uint16), got float32"),
    (lambda: np.zeros((64, 33), np.uint16),
     "rows of 33 tokens, but model.seq_len=64 needs seq_len + 1 = 65"),
    (lambda: np.zeros((4, 65), np.uint16), "4 rows, fewer than one batch"),
])
def test_token_files_are_checked_on_the_driver(make, fragment, tmp_path, capsys):
    folder = tokens_case(tmp_path, make())
    line = assert_one_line(*cli(["run", "optimizer_robustness", "--set", "data.source=tokens",
                                 "--set", f"data.path={folder}", "--storage",
                                 str(tmp_path / "runs")], capsys), fragment)
    assert "train.npy" in line
    assert not (tmp_path / "runs").exists()


def h5ad_case(tmp_path, kind):
    from raystudy.algorithms.sampling import make_anndata_collection

    files = make_anndata_collection(tmp_path / "cells", 600, 20, 2, 0.2, progress=False)
    if kind == "zero":
        files[1].write_bytes(b"")
    elif kind == "truncated":
        files[1].write_bytes(files[1].read_bytes()[:3000])
    elif kind == "garbage":
        files[1].write_bytes(b"this is not hdf5" * 500)
    elif kind == "genes":
        with h5py.File(files[1], "r+") as f:
            names = f["var"]["_index"]
            names[0] = b"other-gene"
    return files[1]


@pytest.mark.parametrize("kind,fragment", [
    ("zero", "the file is empty"), ("truncated", "truncated"), ("garbage", "not a readable HDF5"),
    ("genes", "genes (var names) differ"),
])
def test_h5ad_collections_are_checked_on_the_driver(kind, fragment, tmp_path, capsys):
    bad = h5ad_case(tmp_path, kind)
    line = assert_one_line(*cli(["sweep", "cell_classifier", "--space", "demo",
                                 "--set", f"data.path={bad.parent}", "--set", "data.val_cells=64",
                                 "--storage", str(tmp_path / "runs")], capsys), fragment)
    assert bad.name in line
    assert not (tmp_path / "runs").exists()


def test_unwritable_storage_and_data_outputs(tmp_path, capsys, mount_tmpfs):
    read_only = mount_tmpfs("1m", read_only=True)
    assert_one_line(*cli(["run", "optimizer_robustness", "--storage", str(read_only / "runs")],
                         capsys), "--storage", "read-only file system")
    assert_one_line(*cli(["data", "make-tokens", str(read_only / "tok"), "--max-bytes",
                          "20000", "--seq-len", "16"], capsys), "read-only file system")
    assert_one_line(*cli(["data", "make-anndata", str(read_only / "cells"), "--cells", "100",
                          "--genes", "10"], capsys), "read-only file system")
    full = mount_tmpfs("256k")
    line = assert_one_line(*cli(["data", "make-anndata", str(full / "cells"), "--cells",
                                 "20000", "--genes", "500", "--plates", "2"], capsys),
                           "make-anndata output folder")
    assert "MB free, need at least" in line
    assert list(full.iterdir()) == []


def test_token_writer_leaves_no_temp_file_on_a_full_disk(mount_tmpfs):
    from raystudy.algorithms.text import write_token_files

    full = mount_tmpfs("64k")
    with pytest.raises(OSError):  # numpy's short write: "359992 requested and 32704 written"
        write_token_files(full / "tok", np.zeros(400_000, np.uint8), seq_len=16)
    assert [p.name for p in (full / "tok").iterdir()] == []
