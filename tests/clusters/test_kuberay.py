"""The shipped KubeRay manifests (``clusters/kuberay/*.yaml``), checked as KubeRay and as
Ray read them.

As KubeRay reads them: no CRD file ships offline, so ``KUBERAY_V1`` below spells out the
field names of ``ray.io/v1`` RayCluster and RayJob specs, transcribed by hand from the
KubeRay v1.6.0 CRDs (``ray-operator/config/crd/bases/``; generated from the Go types in
``ray-operator/apis/ray/v1/``): the allowed keys of each object, which of them the
schema requires, the enums, and the types a typo would break (``rayStartParams`` is a
``map[string]string``, replicas are ``int32``). A few rules of the operator's own
validation (``controllers/ray/utils/validation.go``) are added: name length and form,
Ray 2.52+ for token authentication, a group's idle timeout only with autoscaler v2.
Pod templates are Kubernetes core types and are checked only where KubeRay reads them:
the Ray container must come first.

As Ray reads them: each RayCluster (a RayJob's ``rayClusterSpec`` too) goes through the
KubeRay autoscaler's own config derivation from the ray wheel, and the node types,
resources, min/max workers and idle timeout it yields must be the promised ones and
agree with the pods' Kubernetes resources; raystudy's preflight must be able to place
the RayJob's sweep on the node types the autoscaler may add.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

if TYPE_CHECKING:
    from raystudy.platform.execution.preflight import Capacity

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
KUBERAY_YAMLS = sorted((CLUSTERS / "kuberay").glob("*.yaml"))

# object -> (allowed keys, required keys): the property names and `required` lists of the
# KubeRay v1.6.0 CRDs (config/crd/bases/ray.io_rayclusters.yaml, ray.io_rayjobs.yaml),
# generated from the Go types. 1.6.0 is the oldest release the manifests work with
# (authOptions.secretName); later releases only add fields. minReplicas/maxReplicas are
# required there but defaulted (0, 2^31-1) by the API server; we want them written.
KUBERAY_V1: dict[str, tuple[set[str], set[str]]] = {
    "RayClusterSpec": (
        {"upgradeStrategy", "authOptions", "suspend", "managedBy", "autoscalerOptions",
         "headServiceAnnotations", "enableInTreeAutoscaling", "gcsFaultToleranceOptions",
         "headGroupSpec", "rayVersion", "workerGroupSpecs"},
        {"headGroupSpec"},
    ),
    "HeadGroupSpec": (
        {"template", "headService", "enableIngress", "resources", "labels", "rayStartParams",
         "serviceType"},
        {"template"},
    ),
    "WorkerGroupSpec": (
        {"suspend", "groupName", "replicas", "minReplicas", "maxReplicas",
         "idleTimeoutSeconds", "resources", "labels", "rayStartParams", "template",
         "scaleStrategy", "numOfHosts"},
        {"groupName", "minReplicas", "maxReplicas", "template"},
    ),
    "AutoscalerOptions": (
        {"resources", "image", "imagePullPolicy", "securityContext", "idleTimeoutSeconds",
         "upscalingMode", "version", "env", "envFrom", "volumeMounts"},
        set(),
    ),
    "AuthOptions": ({"mode", "secretName", "enableK8sTokenAuth"}, set()),
    "RayJobSpec": (
        {"activeDeadlineSeconds", "backoffLimit", "rayClusterSpec", "submitterPodTemplate",
         "metadata", "clusterSelector", "submitterConfig", "managedBy", "deletionStrategy",
         "entrypoint", "runtimeEnvYAML", "jobId", "submissionMode", "entrypointResources",
         "entrypointNumCpus", "entrypointNumGpus", "ttlSecondsAfterFinished",
         "shutdownAfterJobFinishes", "suspend", "preRunningDeadlineSeconds"},
        set(),
    ),
}
# enums of the CRD schema, and of the operator's Go constants (submission modes)
UPSCALING_MODES = {"Default", "Aggressive", "Conservative"}
AUTOSCALER_VERSIONS = {"v1", "v2"}
AUTH_MODES = {"disabled", "token"}
SUBMISSION_MODES = {"K8sJobMode", "HTTPMode", "InteractiveMode", "SidecarMode"}
# what the operator's validation (controllers/ray/utils/validation.go) refuses besides:
# names are DNS-1035 labels of at most 53 characters (RayCluster) or 47 (RayJob, whose
# cluster gets a 6-character suffix); token authentication needs Ray 2.52.0 or newer.
DNS_1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
MAX_NAME_LENGTH = {"RayCluster": 53, "RayJob": 47}
MIN_RAY_FOR_TOKEN_AUTH = (2, 52, 0)
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")  # container names
RAY_RESOURCE_PARAMS = ("num-cpus", "num-gpus", "memory", "resources")
AUTH_SECRET = "raystudy-auth"  # holds the token under the key auth_token
AUTH_ENV = {"RAY_AUTH_MODE", "RAY_AUTH_TOKEN"}


def load_manifest(name: str) -> dict[str, Any]:
    """One manifest of clusters/kuberay/, parsed."""
    return yaml.safe_load((CLUSTERS / "kuberay" / name).read_text())


def ray_cluster_cr(manifest: dict[str, Any]) -> dict[str, Any]:
    """The RayCluster a manifest makes: itself, or the one a RayJob creates from its
    ``rayClusterSpec``; with the namespace the API server would fill in."""
    if manifest["kind"] == "RayJob":
        manifest = {"kind": "RayCluster", "metadata": dict(manifest["metadata"]),
                    "spec": manifest["spec"]["rayClusterSpec"]}
    return {**manifest, "metadata": {**manifest["metadata"], "namespace": "default"}}


def check_object(kind: str, obj: Any, where: str) -> list[str]:
    """Unknown and missing fields of one CRD object."""
    if not isinstance(obj, dict):
        return [f"{where}: {kind} must be a mapping"]
    allowed, required = KUBERAY_V1[kind]
    errors = [f"{where}: unknown field '{key}' in {kind}" for key in obj if key not in allowed]
    errors += [f"{where}: {kind} needs '{key}'" for key in sorted(required - obj.keys())]
    return errors


def check_group(kind: str, group: Any, where: str, autoscaler_v2: bool) -> list[str]:
    """A head or worker group: fields, rayStartParams, containers, replica counts."""
    errors = check_object(kind, group, where)
    if errors:
        return errors
    params = group.get("rayStartParams", {})
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
        return [f"{where}: rayStartParams must map strings to strings (quote numbers)"]
    if group.get("resources") and any(params.get(k) for k in RAY_RESOURCE_PARAMS):
        errors.append(f"{where}: Ray resources in both rayStartParams and resources")
    if "labels" in params:
        errors.append(f"{where}: rayStartParams labels are refused; use the group's labels")
    containers = (group["template"].get("spec") or {}).get("containers") or []
    if not containers:
        errors.append(f"{where}: the pod template has no containers")
    for container in containers:
        name = container.get("name", "")
        if not DNS_LABEL.match(name):
            errors.append(f"{where}: container name '{name}' is not a DNS-1123 label")
        if not container.get("image"):
            errors.append(f"{where}: container '{name}' has no image")
    if containers and containers[0].get("name") not in ("ray-head", "ray-worker"):
        errors.append(f"{where}: the Ray container must come first (ray-head / ray-worker)")
    for key in ("replicas", "minReplicas", "maxReplicas", "idleTimeoutSeconds", "numOfHosts"):
        if key in group and not (isinstance(group[key], int) and group[key] >= 0):
            errors.append(f"{where}: {key} must be a non-negative integer")
    if kind == "WorkerGroupSpec" and not errors:
        lo, hi = group["minReplicas"], group["maxReplicas"]
        if not lo <= group.get("replicas", lo) <= hi:
            errors.append(f"{where}: need minReplicas <= replicas <= maxReplicas")
        if "idleTimeoutSeconds" in group and not autoscaler_v2:
            errors.append(f"{where}: a group's idleTimeoutSeconds needs autoscaler v2 "
                          "(autoscalerOptions.version: v2)")
    return errors


def ray_version(text: Any) -> tuple[int, ...]:
    """``"2.60.0"`` -> ``(2, 60, 0)``; ``()`` when it is not a version."""
    match = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    return tuple(int(part or 0) for part in match.groups()) if match else ()


def check_auth(spec: dict[str, Any], where: str, in_rayjob: bool) -> list[str]:
    """authOptions: fields, mode, and the operator's rules around token authentication."""
    auth = spec["authOptions"]
    errors = check_object("AuthOptions", auth, f"{where}.authOptions")
    if errors:
        return errors
    mode = auth.get("mode", "token")
    if mode not in AUTH_MODES:
        errors.append(f"{where}: authOptions.mode must be one of {sorted(AUTH_MODES)}")
    if mode == "token" and ray_version(spec.get("rayVersion")) < MIN_RAY_FOR_TOKEN_AUTH:
        errors.append(f"{where}: token authentication needs rayVersion 2.52.0 or newer")
    if not isinstance(auth.get("secretName", ""), str):
        errors.append(f"{where}: authOptions.secretName must be a string")
    if auth.get("enableK8sTokenAuth") and (in_rayjob or auth.get("secretName")):
        errors.append(f"{where}: enableK8sTokenAuth is refused in a RayJob or with secretName")
    return errors


def check_cluster_spec(spec: Any, where: str, in_rayjob: bool = False) -> list[str]:
    """A RayClusterSpec, on its own or as a RayJob's rayClusterSpec."""
    errors = check_object("RayClusterSpec", spec, where)
    if errors:
        return errors
    options = spec.get("autoscalerOptions", {})
    errors += check_object("AutoscalerOptions", options, f"{where}.autoscalerOptions")
    if options.get("upscalingMode", "Default") not in UPSCALING_MODES:
        errors.append(f"{where}: upscalingMode must be one of {sorted(UPSCALING_MODES)}")
    if options.get("version", "v1") not in AUTOSCALER_VERSIONS:
        errors.append(f"{where}: autoscalerOptions.version must be v1 or v2")
    autoscaler_v2 = options.get("version") == "v2"
    errors += check_group("HeadGroupSpec", spec["headGroupSpec"], f"{where}.headGroupSpec",
                          autoscaler_v2)
    names = [g.get("groupName") for g in spec.get("workerGroupSpecs", [])]
    if len(names) != len(set(names)):
        errors.append(f"{where}: worker group names must be unique")
    for i, group in enumerate(spec.get("workerGroupSpecs", [])):
        errors += check_group("WorkerGroupSpec", group, f"{where}.workerGroupSpecs[{i}]",
                              autoscaler_v2)
    if "authOptions" in spec:
        errors += check_auth(spec, where, in_rayjob)
    return errors


def check_manifest(doc: dict[str, Any]) -> list[str]:
    """Everything the API server (CRD schema) or the operator would refuse in a manifest."""
    if doc.get("apiVersion") != "ray.io/v1":
        return [f"apiVersion must be ray.io/v1, not {doc.get('apiVersion')}"]
    kind = doc.get("kind")
    if kind not in MAX_NAME_LENGTH:
        return [f"unknown kind {kind}"]
    name = (doc.get("metadata") or {}).get("name", "")
    if not DNS_1035_LABEL.match(name) or len(name) > MAX_NAME_LENGTH[kind]:
        return [f"metadata.name must be a DNS-1035 label of at most "
                f"{MAX_NAME_LENGTH[kind]} characters"]
    spec = doc.get("spec")
    if kind == "RayCluster":
        return check_cluster_spec(spec, "spec")
    errors = check_object("RayJobSpec", spec, "spec")
    if errors:
        return errors
    if not isinstance(spec.get("entrypoint"), str) or not spec["entrypoint"].strip():
        errors.append("spec.entrypoint must be a non-empty command")
    if spec.get("submissionMode", "K8sJobMode") not in SUBMISSION_MODES:
        errors.append(f"spec.submissionMode must be one of {sorted(SUBMISSION_MODES)}")
    if spec.get("ttlSecondsAfterFinished") and not spec.get("shutdownAfterJobFinishes"):
        errors.append("spec.ttlSecondsAfterFinished needs shutdownAfterJobFinishes: true")
    if "rayClusterSpec" not in spec and "clusterSelector" not in spec:
        errors.append("spec needs rayClusterSpec or clusterSelector")
    if "rayClusterSpec" in spec:
        errors += check_cluster_spec(spec["rayClusterSpec"], "spec.rayClusterSpec",
                                     in_rayjob=True)
    return errors


@pytest.mark.parametrize("path", KUBERAY_YAMLS, ids=lambda p: p.name)
def test_kuberay_manifest_matches_crd_fields(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        assert check_manifest(doc) == []
        spec = doc["spec"].get("rayClusterSpec", doc["spec"])
        assert spec["enableInTreeAutoscaling"] is True
        assert spec["rayVersion"] == "2.60.0"


def all_containers(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every container and init container of the head and worker pod templates."""
    groups = [spec["headGroupSpec"], *spec.get("workerGroupSpecs", [])]
    return [c for g in groups for key in ("containers", "initContainers")
            for c in g["template"]["spec"].get(key, [])]


@pytest.mark.parametrize("path", KUBERAY_YAMLS, ids=lambda p: p.name)
def test_kuberay_token_auth_comes_from_auth_options(path: Path) -> None:
    """The operator hands the token to every container (the autoscaler sidecar and the
    RayJob submitter too) from the one Secret the header's kubectl line creates."""
    spec = ray_cluster_cr(yaml.safe_load(path.read_text()))["spec"]
    assert spec["authOptions"] == {"mode": "token", "secretName": AUTH_SECRET}
    set_by_hand = [(c["name"], e["name"]) for c in all_containers(spec)
                   for e in c.get("env", []) if e["name"] in AUTH_ENV]
    assert set_by_hand == [], "the operator sets these from authOptions"
    assert (f"kubectl create secret generic {AUTH_SECRET} --from-file=auth_token="
            in path.read_text())


def test_kuberay_rayjob_runs_a_sweep() -> None:
    job = yaml.safe_load((CLUSTERS / "kuberay" / "rayjob.yaml").read_text())
    words = job["spec"]["entrypoint"].split()
    assert words[:2] == ["raystudy", "sweep"] and "--storage" in words
    assert job["spec"]["shutdownAfterJobFinishes"] is True


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s["headGroupSpec"]["rayStartParams"].update({"num-cpus": 0}), "strings"),
    (lambda s: s["workerGroupSpecs"][0].update({"minReplica": 1}), "unknown field"),
    (lambda s: s["workerGroupSpecs"][0].pop("groupName"), "needs 'groupName'"),
    (lambda s: s["workerGroupSpecs"][0].pop("maxReplicas"), "needs 'maxReplicas'"),
    (lambda s: s["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        {"name": "Ray_Head"}), "DNS-1123"),
    (lambda s: s["workerGroupSpecs"][0].update({"replicas": 9}), "minReplicas <="),
    (lambda s: s["workerGroupSpecs"][0].update({"idleTimeoutSeconds": 60}), "autoscaler v2"),
    (lambda s: s["headGroupSpec"].update({"resources": {"CPU": "0"}}), "in both rayStartParams"),
    (lambda s: s["autoscalerOptions"].update({"version": "v3"}), "v1 or v2"),
    (lambda s: s.update({"authOptions": {"mode": "Token"}}), "authOptions.mode must be"),
    (lambda s: s.update({"authOptions": {"secretname": "raystudy-auth"}}),
     "unknown field 'secretname' in AuthOptions"),
    (lambda s: s.update({"authOptions": {"mode": "token"}, "rayVersion": "2.51.0"}),
     "needs rayVersion 2.52.0"),
])
def test_kuberay_checker_catches_mistakes(mutate: Any, message: str) -> None:
    doc = load_manifest("raycluster.yaml")
    mutate(doc["spec"])
    assert any(message in error for error in check_manifest(doc)), check_manifest(doc)


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["spec"].update({"deletionPolicy": {}}), "unknown field 'deletionPolicy'"),
    (lambda d: d["spec"].update({"submissionMode": "K8sJob"}), "submissionMode must be"),
    (lambda d: d["spec"]["rayClusterSpec"].update(
        {"authOptions": {"mode": "token", "enableK8sTokenAuth": True}}), "refused in a RayJob"),
    (lambda d: d["spec"].update({"shutdownAfterJobFinishes": False}), "needs shutdownAfter"),
    (lambda d: d["metadata"].update({"name": "2-sweep"}), "DNS-1035"),
    (lambda d: d["metadata"].update({"name": "s" * 48}), "at most 47"),
])
def test_kuberay_checker_catches_rayjob_mistakes(mutate: Any, message: str) -> None:
    doc = load_manifest("rayjob.yaml")
    mutate(doc)
    assert any(message in error for error in check_manifest(doc)), check_manifest(doc)


# ------------------------------------------------- the manifests as the Ray autoscaler reads them
# The KubeRay autoscaler (the sidecar KubeRay adds to the head pod) reads the RayCluster
# from the Kubernetes API and turns it into an autoscaling config with
# ``_derive_autoscaling_config_from_ray_cr``, which ends with Ray's ``validate_config``.
# Autoscaler v1 uses that config as is; v2 wraps it in ``AutoscalingConfig``
# (``prepare_config`` and ``validate_config`` again). Both run here on the manifests.
GIB = 1024**3
HEAD = "headgroup"  # the name the KubeRay autoscaler gives the head group

# manifest -> node type -> (Ray resources, min_workers, max_workers), as clusters/README.md
# and the manifests' comments promise: a head with 0 CPUs that only schedules, a GPU
# group (1 GPU, 8 CPUs per pod) and, on the long-lived cluster, a CPU group (16 CPUs),
# each scaling from 0 to 8 pods; memory is the pod's memory limit.
PROMISED_NODE_TYPES: dict[str, dict[str, tuple[dict[str, int], int, int]]] = {
    "raycluster.yaml": {
        HEAD: ({"CPU": 0, "memory": 16 * GIB}, 0, 0),
        "gpu": ({"CPU": 8, "GPU": 1, "memory": 32 * GIB}, 0, 8),
        "cpu": ({"CPU": 16, "memory": 32 * GIB}, 0, 8),
    },
    "rayjob.yaml": {
        HEAD: ({"CPU": 0, "memory": 16 * GIB}, 0, 0),
        "gpu": ({"CPU": 8, "GPU": 1, "memory": 32 * GIB}, 0, 8),
    },
}
PROMISED_IDLE_TIMEOUT_MINUTES = 10.0


def autoscaling_config(manifest: dict[str, Any]) -> dict[str, Any]:
    """What the KubeRay autoscaler of Ray 2.60 derives from the manifest's RayCluster."""
    from ray.autoscaler._private.kuberay.autoscaling_config import (
        _derive_autoscaling_config_from_ray_cr,
    )

    return _derive_autoscaling_config_from_ray_cr(ray_cluster_cr(manifest))


def promise_errors(config: dict[str, Any], promised: dict[str, tuple[dict[str, int], int, int]],
                   ) -> list[str]:
    """Where the autoscaler's node types differ from the promised ones."""
    seen = {name: (t["resources"], t["min_workers"], t["max_workers"])
            for name, t in config["available_node_types"].items()}
    errors = [f"node types {sorted(seen)} != promised {sorted(promised)}"
              ] if seen.keys() != promised.keys() else []
    for name in sorted(seen.keys() & promised.keys()):
        if seen[name] != promised[name]:
            errors.append(f"{name}: the autoscaler sees (resources, min, max) {seen[name]}, "
                          f"promised {promised[name]}")
    if config["idle_timeout_minutes"] != PROMISED_IDLE_TIMEOUT_MINUTES:
        errors.append(f"idle timeout {config['idle_timeout_minutes']} min, "
                      f"promised {PROMISED_IDLE_TIMEOUT_MINUTES}")
    return errors


def quantity(text: str) -> float:
    """A Kubernetes quantity ("16Gi", "500m", "8") as a number."""
    from ray.autoscaler._private.kuberay.utils import parse_quantity

    return float(parse_quantity(str(text)))


def pod_agreement_errors(manifest: dict[str, Any], config: dict[str, Any]) -> list[str]:
    """Ray's view of each worker pod must match what Kubernetes gives the pod: the same
    GPUs, CPUs and memory (limits; requests equal to limits, so the pod is not
    overcommitted). The head's 0 CPUs is a promise of its own, checked elsewhere."""
    spec = ray_cluster_cr(manifest)["spec"]
    errors = []
    for group in spec["workerGroupSpecs"]:
        name = group["groupName"]
        pod = group["template"]["spec"]["containers"][0].get("resources", {})
        limits, requests = pod.get("limits", {}), pod.get("requests", {})
        if limits != requests:
            errors.append(f"{name}: pod requests {requests} != limits {limits}")
        ray_sees = config["available_node_types"][name]["resources"]
        pod_has = {"CPU": quantity(limits.get("cpu", 0)),
                   "GPU": quantity(limits.get("nvidia.com/gpu", 0)),
                   "memory": quantity(limits.get("memory", 0))}
        for key, amount in pod_has.items():
            if ray_sees.get(key, 0) != amount:
                errors.append(f"{name}: Ray sees {key} {ray_sees.get(key, 0)}, "
                              f"the pod has {amount:g}")
    return errors


@pytest.mark.parametrize("name", sorted(PROMISED_NODE_TYPES))
def test_kuberay_autoscaler_sees_the_promised_node_types(name: str) -> None:
    config = autoscaling_config(load_manifest(name))  # raises if validate_config refuses it
    assert promise_errors(config, PROMISED_NODE_TYPES[name]) == []
    assert config["head_node_type"] == HEAD
    assert config["max_workers"] == sum(t[2] for t in PROMISED_NODE_TYPES[name].values())


@pytest.mark.parametrize("name", sorted(PROMISED_NODE_TYPES))
def test_kuberay_autoscaler_v2_reads_the_same_node_types(name: str) -> None:
    from ray.autoscaler.v2.instance_manager.config import AutoscalingConfig

    v2 = AutoscalingConfig(autoscaling_config(load_manifest(name)))
    seen = {n: (t.resources, t.min_worker_nodes, t.max_worker_nodes)
            for n, t in v2.get_node_type_configs().items()}
    # v2 counts the head as one node of its type
    promised = {n: (res, lo, hi + (n == HEAD))
                for n, (res, lo, hi) in PROMISED_NODE_TYPES[name].items()}
    assert seen == promised
    assert v2.get_head_node_type() == HEAD
    assert v2.get_idle_timeout_s() == PROMISED_IDLE_TIMEOUT_MINUTES * 60


@pytest.mark.parametrize("name", sorted(PROMISED_NODE_TYPES))
def test_kuberay_ray_resources_match_the_pods(name: str) -> None:
    manifest = load_manifest(name)
    assert pod_agreement_errors(manifest, autoscaling_config(manifest)) == []


def test_every_kuberay_manifest_has_promises() -> None:
    assert sorted(PROMISED_NODE_TYPES) == [p.name for p in KUBERAY_YAMLS]


def _group(spec: dict[str, Any], name: str) -> dict[str, Any]:
    return next(g for g in spec["workerGroupSpecs"] if g["groupName"] == name)


def _ray_container(group: dict[str, Any]) -> dict[str, Any]:
    return group["template"]["spec"]["containers"][0]


def _drop_gpus(spec: dict[str, Any]) -> None:
    pod = _ray_container(_group(spec, "gpu"))["resources"]
    for side in ("limits", "requests"):
        pod[side].pop("nvidia.com/gpu")


@pytest.mark.parametrize("mutate, message", [
    # Ray would schedule two GPU workers on a one-GPU pod
    (lambda s: _group(s, "gpu")["rayStartParams"].update({"num-gpus": "2"}),
     "gpu: Ray sees GPU 2, the pod has 1"),
    # the "GPU" group without a GPU
    (_drop_gpus, "gpu: the autoscaler sees"),
    # the head would take trials and Train workers
    (lambda s: s["headGroupSpec"]["rayStartParams"].pop("num-cpus"), "headgroup: the autoscaler"),
    # a CPU pod that never goes away
    (lambda s: _group(s, "cpu").update({"minReplicas": 1, "replicas": 1}), "cpu: the autoscaler"),
    (lambda s: _ray_container(_group(s, "cpu"))["resources"]["limits"].update({"cpu": "12"}),
     "cpu: pod requests"),
    (lambda s: s["autoscalerOptions"].update({"idleTimeoutSeconds": 60}), "idle timeout 1.0 min"),
])
def test_kuberay_drift_is_caught(mutate: Any, message: str) -> None:
    manifest = load_manifest("raycluster.yaml")
    mutate(manifest["spec"])
    config = autoscaling_config(manifest)
    errors = (promise_errors(config, PROMISED_NODE_TYPES["raycluster.yaml"])
              + pod_agreement_errors(manifest, config))
    assert any(message in error for error in errors), errors



def capacity_of(config: dict[str, Any], where: str) -> Capacity:
    """raystudy's view of a cluster whose only live node is the head: what its
    preflight needs to know to place a trial (the node types the autoscaler may add)."""
    from raystudy.platform.execution.preflight import Capacity

    types = config["available_node_types"]
    workers = {name: ({k: float(v) for k, v in t["resources"].items()}, t["max_workers"])
               for name, t in types.items() if name != config["head_node_type"]}
    head = {k: float(v) for k, v in types[config["head_node_type"]]["resources"].items()}
    return Capacity([head], where, workers)


def sweep_bundles(entrypoint: str) -> list[dict[str, float]]:
    """Everything one trial of a ``raystudy sweep`` command holds, read by raystudy's CLI."""
    from raystudy.cli import _request, build_parser

    words = shlex.split(entrypoint)
    assert words[:2] == ["raystudy", "sweep"]
    args = build_parser().parse_args(words[1:])
    return _request(args, args.command).compute.all_bundles()


@pytest.mark.parametrize("name", sorted(PROMISED_NODE_TYPES))
def test_rayjob_sweep_fits_each_kuberay_cluster(name: str) -> None:
    """The GPU sweep of rayjob.yaml can be placed on either cluster: each bundle fits a
    node type the autoscaler can add, and all of them fit at once."""
    from raystudy.platform.execution.preflight import check_placeable

    bundles = sweep_bundles(load_manifest("rayjob.yaml")["spec"]["entrypoint"])
    assert sum(b.get("GPU", 0) for b in bundles) == 4  # --workers 4 --gpus-per-worker 1
    check_placeable(bundles, capacity_of(autoscaling_config(load_manifest(name)), name))


def test_rayjob_sweep_without_a_gpu_group_is_refused() -> None:
    from raystudy.errors import UserError
    from raystudy.platform.execution.preflight import check_placeable

    manifest = load_manifest("rayjob.yaml")
    _drop_gpus(manifest["spec"]["rayClusterSpec"])
    bundles = sweep_bundles(manifest["spec"]["entrypoint"])
    with pytest.raises(UserError, match="CPU 1, GPU 1 in one place"):
        check_placeable(bundles, capacity_of(autoscaling_config(manifest), "rayjob.yaml"))
