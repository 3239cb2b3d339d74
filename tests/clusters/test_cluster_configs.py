"""The shipped launcher YAMLs (``clusters/*.yaml``) pass Ray's own validation.

They go through what ``ray up`` does before it calls a cloud: merge the provider's
defaults (``prepare_config``), then ``validate_config`` with Ray's ``ray-schema.json``.
No cloud API is called. The KubeRay manifests are checked in ``test_kuberay.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
# Cloud launcher YAMLs; local-autoscale.yaml holds node types for `raystudy cluster
# start --autoscale` (checked against Ray's schema in tests/platform/test_localcluster.py).
LAUNCHER_YAMLS = sorted(p for p in CLUSTERS.glob("*.yaml") if p.name != "local-autoscale.yaml")


@pytest.mark.parametrize("path", LAUNCHER_YAMLS, ids=lambda p: p.name)
def test_launcher_yaml_passes_ray_validation(path: Path) -> None:
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load(path.read_text())
    config = prepare_config(raw)
    validate_config(config)
    types = config["available_node_types"]
    workers = {name: t for name, t in types.items() if name != config["head_node_type"]}
    assert any(t["resources"].get("GPU") for t in workers.values()), "a GPU worker type"
    assert any(not t["resources"].get("GPU") for t in workers.values()), "a CPU worker type"
    assert all(t.get("min_workers", 0) == 0 for t in workers.values()), "workers scale from 0"
    assert raw["idle_timeout_minutes"] > 0
    setup = " ".join(config["setup_commands"])
    assert "torch==2.13.0" in setup and "ray[default,tune,train,data]==2.60.0" in setup
    assert "~/raystudy" in setup and "~/raystudy" in raw["file_mounts"]
    assert all("RAY_AUTH_MODE=token" in " ".join(config[k])
               for k in ("head_start_ray_commands", "worker_start_ray_commands"))


def test_launcher_gpu_workers_are_spot_or_preemptible() -> None:
    aws = yaml.safe_load((CLUSTERS / "aws.yaml").read_text())["available_node_types"]
    gcp = yaml.safe_load((CLUSTERS / "gcp.yaml").read_text())["available_node_types"]
    assert aws["gpu_spot"]["node_config"]["InstanceMarketOptions"]["MarketType"] == "spot"
    assert {"preemptible": True} in gcp["gpu_preemptible"]["node_config"]["scheduling"]


def test_launcher_validation_catches_a_bad_field() -> None:
    import jsonschema
    from ray.autoscaler._private.util import prepare_config, validate_config

    raw = yaml.safe_load((CLUSTERS / "aws.yaml").read_text())
    raw["idle_timeout_minutez"] = 5
    with pytest.raises(jsonschema.ValidationError):
        validate_config(prepare_config(raw))
