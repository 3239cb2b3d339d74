"""``raystudy cluster``'s pieces that need no Ray: the launcher YAML turned into a fake
autoscaler's config, the node types as Ray's own ClusterConfig, and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from cluster_helpers import REPO

from raystudy.cli import main
from raystudy.errors import UserError
from raystudy.platform.cluster import localcluster


def test_launcher_yaml_becomes_a_fake_autoscaler_config_ray_accepts():
    from ray.autoscaler._private.util import validate_config

    launcher = localcluster.load_node_types(REPO / "clusters" / "local-autoscale.yaml")
    config = localcluster.fake_autoscaler_config(launcher, "127.0.0.1:6379", head_cpus=None)
    assert config["provider"] == {
        "type": "fake_multinode", "use_node_id_as_ip": True, "disable_node_updaters": True,
        "disable_launch_config_check": True, "gcs_address": "127.0.0.1:6379"}
    head = config["available_node_types"][config["head_node_type"]]
    assert config["head_node_type"] == localcluster.FAKE_HEAD_TYPE
    assert head["resources"]["CPU"] == 0 and head["max_workers"] == 0
    assert config["available_node_types"]["cpu_worker"]["max_workers"] == 2
    validate_config(config)  # Ray's own schema (the wheel lacks the fake provider's defaults)


def test_node_types_as_rays_cluster_config():
    from ray._private.state import GlobalState
    from ray.core.generated import autoscaler_pb2

    aws = yaml.safe_load((REPO / "clusters" / "aws.yaml").read_text())
    proto = autoscaler_pb2.ClusterConfig.FromString(localcluster.cluster_config_proto(aws))
    groups = {g.name: g for g in proto.node_group_configs}
    assert groups["gpu_spot"].resources["GPU"] == 1 and groups["gpu_spot"].max_count == 8
    assert groups["cpu"].resources["CPU"] == 16 and groups["cpu"].min_count == 0
    # what Ray Train and Ray Data compute from it: 8 x 8 + 8 x 16 CPUs, 8 GPUs
    assert GlobalState._calculate_max_resource_from_cluster_config(proto, "CPU") == 192
    assert GlobalState._calculate_max_resource_from_cluster_config(proto, "GPU") == 8


def test_bad_autoscale_files_are_one_line(tmp_path: Path):
    no_head = tmp_path / "no_head.yaml"
    no_head.write_text("available_node_types: {w: {resources: {CPU: 1}}}\n")
    with pytest.raises(UserError, match="head_node_type None is not one of w"):
        localcluster.load_node_types(no_head)
    broken = tmp_path / "broken.yaml"
    broken.write_text("available_node_types: [\n")
    with pytest.raises(UserError, match="is not valid YAML"):
        localcluster.load_node_types(broken)


def test_cluster_cli_errors_and_nothing_to_stop(tmp_path: Path, capsys):
    assert main(["cluster", "start", "--autoscale", str(tmp_path / "none.yaml"),
                 "--dir", str(tmp_path / "c")]) == 2
    assert "--autoscale" in capsys.readouterr().err
    assert main(["cluster", "start", "--workers", "1", "--autoscale",
                 str(REPO / "clusters" / "local-autoscale.yaml"),
                 "--dir", str(tmp_path / "c")]) == 2
    assert "exclusive" in capsys.readouterr().err
    assert not (tmp_path / "c").exists(), "nothing started, nothing written"
    assert main(["cluster", "stop", "--dir", str(tmp_path)]) == 0
    assert "no cluster was started from" in capsys.readouterr().out
    assert main(["cluster", "status", "--dir", str(tmp_path)]) == 1
