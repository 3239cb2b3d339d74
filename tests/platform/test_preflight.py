"""Pre-flight checks: names, writable folders, resources, addresses, data files."""

from __future__ import annotations

import errno
import json
import pickle
import subprocess

import numpy as np
import pytest

from raystudy.contract import data as datacheck
from raystudy.errors import DataError, MissingDataError, UserError
from raystudy.platform.execution import preflight
from raystudy.platform.runs.rundir import find_resumable, remove_failed_start, write_json_atomic


@pytest.mark.parametrize("name", ["../up", "a/b", "/abs", ".hidden", "x..y", ""])
def test_run_names_stay_inside_storage(name):
    with pytest.raises(UserError, match="one folder name inside --storage"):
        preflight.check_run_name(name)
    preflight.check_run_name("optimizer_robustness-sweep-20261201-101500")


def test_writable_probe_read_only_mount_full_disk_and_file_in_path(tmp_path, mount_tmpfs):
    datacheck.check_writable(tmp_path / "new" / "deeper", "--storage", need_bytes=1)
    assert not (tmp_path / "new").exists(), "the probe creates nothing"
    (tmp_path / "file").write_text("x")
    with pytest.raises(UserError, match="is a file, not a folder"):
        datacheck.check_writable(tmp_path / "file" / "runs", "--storage")
    read_only = mount_tmpfs("1m", read_only=True)
    with pytest.raises(UserError, match=r"--storage .*: read-only file system"):
        datacheck.check_writable(read_only / "runs", "--storage")
    small = mount_tmpfs("1m")
    with pytest.raises(UserError, match=r"only 1 MB free, need at least 100 MB"):
        datacheck.check_writable(small, "--storage")
    assert list(small.iterdir()) == []  # the probe file is gone


def test_immutable_folder_is_a_permission_error(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(UserError, match="operation not permitted"):
            datacheck.check_writable(folder / "runs", "--storage", need_bytes=1)
    finally:
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True)


def test_os_errors_become_one_line():
    exc = OSError(errno.ENOSPC, "No space left on device", "/data/x.h5")
    assert datacheck.is_user_os_error(exc)
    assert datacheck.describe_os_error(exc) == "cannot write /data/x.h5: no space left on device"
    assert not datacheck.is_user_os_error(OSError(errno.ECONNRESET, "reset"))


def test_placement_against_nodes_and_autoscaler_node_types():
    capacity = preflight.Capacity([{"CPU": 2, "memory": 8e9}], "this machine")
    preflight.check_placeable([{"CPU": 1}, {"CPU": 1}], capacity)
    with pytest.raises(UserError, match="GPU 1 in one place, but no node of this machine"):
        preflight.check_placeable([{"CPU": 1, "GPU": 1}], capacity)
    with pytest.raises(UserError, match="CPU 3 in all, but this machine has CPU 2"):
        preflight.check_placeable([{"CPU": 1}, {"CPU": 1}, {"CPU": 1}], capacity)
    capacity.node_types["gpu-worker"] = ({"CPU": 8, "GPU": 1}, 4)
    preflight.check_placeable([{"CPU": 1, "GPU": 1}] * 4, capacity)  # the autoscaler adds them
    with pytest.raises(UserError, match="GPU 5 in all"):
        preflight.check_placeable([{"CPU": 1, "GPU": 1}] * 5, capacity)
    with pytest.raises(UserError,
                       match=r"needs about 10.0 GiB of memory \(batch 9\), but x has at most"):
        preflight.check_memory(10 * 1024**3, preflight.Capacity([{"memory": 8e9}], "x"),
                               "batch 9")


def test_unanswered_address_fails_fast():
    from cluster_helpers import free_port

    address = f"127.0.0.1:{free_port()}"
    with pytest.raises(UserError, match=f"no Ray cluster answers at {address} within 1 s"):
        preflight.probe_address(address, 1.0)
    with pytest.raises(UserError, match="is a dashboard URL"):
        preflight.probe_address("http://head:8265", 1.0)
    preflight.probe_address("auto", 1.0)  # Ray finds a local cluster itself


def _fake_run(root, name, study="optimizer_robustness", state=True, summary=None):
    run = root / name
    run.mkdir(parents=True)
    write_json_atomic(run / "raystudy.json", {"study": study, "kind": "sweep"})
    (run / "tuner.pkl").write_bytes(b"x")
    if state:
        trial = json.dumps({"status": "TERMINATED", "trial_id": "a"})
        write_json_atomic(run / "experiment_state-2026.json", {"trial_data": [[trial, "{}"]]})
    if summary is not None:
        write_json_atomic(run / "summary.json", {"counts": summary})
    return run


def test_resume_considers_only_folders_with_tune_state(tmp_path):
    real = _fake_run(tmp_path, "real")
    _fake_run(tmp_path, "done", summary={"finished": 1, "unfinished": 0})
    leftover = _fake_run(tmp_path, "leftover", state=False)  # newer, but a failed start
    assert find_resumable(str(tmp_path), "optimizer_robustness") == real
    remove_failed_start(leftover)
    remove_failed_start(real)
    assert not leftover.exists() and real.exists()


def test_datacheck_names_the_file_and_the_problem(tmp_path):
    with pytest.raises(MissingDataError, match=r"data.path .*nope.npy: no such file \(hint\)"):
        datacheck.require_file(tmp_path / "nope.npy", "data.path", " (hint)")
    empty = tmp_path / "empty.npy"
    empty.write_bytes(b"")
    with pytest.raises(DataError, match="the file is empty"):
        datacheck.require_file(empty, "data.path")
    garbage = tmp_path / "garbage.npy"
    garbage.write_bytes(b"\x93NUMPY garbage" * 10)
    with pytest.raises(DataError, match="garbage.npy: not a readable .npy array"):
        datacheck.open_npy(garbage, "token file")
    np.save(tmp_path / "ok.npy", np.arange(12).reshape(3, 4))
    cut = tmp_path / "cut.npy"
    cut.write_bytes((tmp_path / "ok.npy").read_bytes()[:-20])
    with pytest.raises(DataError, match="cut.npy: not a readable .npy array, or truncated"):
        datacheck.open_npy(cut, "token file")
    with pytest.raises(DataError, match="ok.npy: not a readable HDF5 file"):
        datacheck.open_hdf5(tmp_path / "ok.npy", "D4RL file")
    assert datacheck.sample_rows(10, 3).tolist() == [0, 4, 9]
    assert datacheck.sample_rows(2, 256).tolist() == [0, 1]


def test_data_missing_here_is_a_note_when_attached_to_a_cluster(capsys):
    from raystudy.contract.study import Study
    from raystudy.platform.execution.plan import _check_data

    def missing(config):
        raise MissingDataError("data.path /cluster/data: no such folder")

    def corrupt(config):
        raise DataError("data.path /shared/x.h5: truncated")

    def remote(config):
        return ["data.path=s3://bucket/x is read by the trials"]

    make = lambda check: Study("s", "", object, lambda c, x: None, (), check_data=check)  # noqa: E731
    _check_data(make(missing), None, on_cluster=True)
    assert "not on this machine; the cluster must provide it" in capsys.readouterr().err
    with pytest.raises(MissingDataError):
        _check_data(make(missing), None, on_cluster=False)
    with pytest.raises(DataError, match="truncated"):
        _check_data(make(corrupt), None, on_cluster=True)
    _check_data(make(remote), None, on_cluster=False)
    assert "note: data not checked here: data.path=s3://" in capsys.readouterr().err


def test_launcher_yaml_node_types_and_the_sweeps_the_cloud_examples_suggest():
    """The head of clusters/aws.yaml and gcp.yaml holds 0 CPUs: what a sweep can use comes
    from the worker types alone, and the sweeps their comments suggest pass."""
    from cluster_helpers import REPO

    from raystudy.platform.execution.trainable import Compute

    for name in ("aws.yaml", "gcp.yaml"):
        path = REPO / "clusters" / name
        types = preflight.launcher_node_types(path)
        assert types and all(max_count > 0 for _, max_count in types.values())
        assert any(res.get("GPU") for res, _ in types.values())
        capacity = preflight.Capacity([{"CPU": 0.0, "memory": 3e10}], f"head of {name}",
                                      node_types=types)
        suggested = Compute(workers=4, gpus_per_worker=1)
        assert preflight.check_placeable(suggested.all_bundles(), capacity) == []
        with pytest.raises(UserError, match="GPU 2 in one place"):
            preflight.check_placeable(Compute(workers=1, gpus_per_worker=2).all_bundles(),
                                      capacity)


def test_unknown_node_types_accept_with_notes_and_bad_cluster_configs_are_one_line(tmp_path):
    capacity = preflight.Capacity([{"CPU": 0.0}], "the head", types_known=False)
    notes = preflight.check_placeable([{"CPU": 1}], capacity)
    assert len(notes) == 2 and "CPU 1 in one place" in notes[0]
    (tmp_path / "bad.yaml").write_text("available_node_types: [1, 2]\n")
    with pytest.raises(UserError, match="--cluster-config .*bad.yaml: no available_node_types"):
        preflight.launcher_node_types(tmp_path / "bad.yaml")
    with pytest.raises(UserError, match="--cluster-config .*none.yaml: No such file"):
        preflight.launcher_node_types(tmp_path / "none.yaml")
    (tmp_path / "auto.yaml").write_text(  # resources left to the instance type: unknown
        "head_node_type: h\navailable_node_types: {h: {}, w: {max_workers: 2}}\n")
    assert preflight.launcher_node_types(tmp_path / "auto.yaml") is None


def test_placement_watch_waits_for_launches_and_stops_when_nothing_comes(capsys):
    from raystudy.platform.execution.placement import PlacementTimeout, PlacementWatch

    launches: dict[str, int] = {"cpu_worker": 2}
    nodes = [{"CPU": 0.0}]
    watch = PlacementWatch([{"CPU": 1}], timeout_s=30, launches=lambda: launches,
                           nodes=lambda: nodes)
    watch.check(now=0.0)
    watch.check(now=100.0)  # nodes are coming: not stuck, however long
    assert "the autoscaler is adding 2 x cpu_worker" in capsys.readouterr().err
    launches.clear()
    watch.check(now=101.0)
    watch.check(now=130.0)
    with pytest.raises(PlacementTimeout, match=r"CPU 1 in one place.*added none in 30 s"):
        watch.check(now=131.5)
    nodes.append({"CPU": 2.0})  # a node that can hold it, busy or not: never stuck
    watch.check(now=500.0)
    watch.check(now=1000.0)
    restored = pickle.loads(pickle.dumps(watch))  # Tune saves callbacks with its state
    assert restored.timeout_s == 30 and callable(restored._launches)
