"""The shipped KubeRay manifests (``clusters/kuberay/*.yaml``) against the fields of the
KubeRay v1 CRDs.

No CRD file ships offline, so ``KUBERAY_V1`` below spells out the fields of
``ray.io/v1`` RayCluster and RayJob specs, transcribed from the Go types of the KubeRay
operator (``ray-operator/apis/ray/v1/raycluster_types.go`` and ``rayjob_types.go``):
the allowed keys of each object, which of them are required (json tags without
``omitempty``), and the types a typo would break (``rayStartParams`` is a
``map[string]string``, replicas are ``int32``). Pod templates are Kubernetes core types
and are checked only where KubeRay reads them: the Ray container must come first.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

CLUSTERS = Path(__file__).resolve().parents[2] / "clusters"
KUBERAY_YAMLS = sorted((CLUSTERS / "kuberay").glob("*.yaml"))

# object -> (allowed keys, required keys), from the KubeRay v1 Go types.
KUBERAY_V1: dict[str, tuple[set[str], set[str]]] = {
    "RayClusterSpec": (
        {"suspend", "managedBy", "autoscalerOptions", "headServiceAnnotations",
         "enableInTreeAutoscaling", "gcsFaultToleranceOptions", "headGroupSpec",
         "rayVersion", "workerGroupSpecs"},
        {"headGroupSpec"},
    ),
    "HeadGroupSpec": (
        {"template", "headService", "enableIngress", "rayStartParams", "serviceType"},
        {"template", "rayStartParams"},
    ),
    "WorkerGroupSpec": (
        {"suspend", "groupName", "replicas", "minReplicas", "maxReplicas",
         "idleTimeoutSeconds", "rayStartParams", "template", "scaleStrategy", "numOfHosts"},
        {"groupName", "rayStartParams", "template"},
    ),
    "AutoscalerOptions": (
        {"resources", "image", "imagePullPolicy", "securityContext", "idleTimeoutSeconds",
         "upscalingMode", "env", "envFrom", "volumeMounts"},
        set(),
    ),
    "RayJobSpec": (
        {"activeDeadlineSeconds", "backoffLimit", "rayClusterSpec", "submitterPodTemplate",
         "metadata", "clusterSelector", "submitterConfig", "managedBy", "deletionPolicy",
         "entrypoint", "runtimeEnvYAML", "jobId", "submissionMode", "entrypointResources",
         "entrypointNumCpus", "entrypointNumGpus", "ttlSecondsAfterFinished",
         "shutdownAfterJobFinishes", "suspend"},
        set(),
    ),
}
UPSCALING_MODES = {"Default", "Aggressive", "Conservative"}
SUBMISSION_MODES = {"K8sJobMode", "HTTPMode", "InteractiveMode"}
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def check_object(kind: str, obj: Any, where: str) -> list[str]:
    if not isinstance(obj, dict):
        return [f"{where}: {kind} must be a mapping"]
    allowed, required = KUBERAY_V1[kind]
    errors = [f"{where}: unknown field '{key}' in {kind}" for key in obj if key not in allowed]
    errors += [f"{where}: {kind} needs '{key}'" for key in sorted(required - obj.keys())]
    return errors


def check_group(kind: str, group: Any, where: str) -> list[str]:
    errors = check_object(kind, group, where)
    if errors:
        return errors
    params = group["rayStartParams"]
    if not isinstance(params, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in params.items()):
        errors.append(f"{where}: rayStartParams must map strings to strings (quote numbers)")
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
    for key in ("replicas", "minReplicas", "maxReplicas", "idleTimeoutSeconds"):
        if key in group and not (isinstance(group[key], int) and group[key] >= 0):
            errors.append(f"{where}: {key} must be a non-negative integer")
    if kind == "WorkerGroupSpec":
        lo, hi = group.get("minReplicas", 0), group.get("maxReplicas", 2**31 - 1)
        if not lo <= group.get("replicas", lo) <= hi:
            errors.append(f"{where}: need minReplicas <= replicas <= maxReplicas")
    return errors


def check_cluster_spec(spec: Any, where: str) -> list[str]:
    errors = check_object("RayClusterSpec", spec, where)
    if errors:
        return errors
    errors += check_group("HeadGroupSpec", spec["headGroupSpec"], f"{where}.headGroupSpec")
    names = [g.get("groupName") for g in spec.get("workerGroupSpecs", [])]
    if len(names) != len(set(names)):
        errors.append(f"{where}: worker group names must be unique")
    for i, group in enumerate(spec.get("workerGroupSpecs", [])):
        errors += check_group("WorkerGroupSpec", group, f"{where}.workerGroupSpecs[{i}]")
    if "autoscalerOptions" in spec:
        options = spec["autoscalerOptions"]
        errors += check_object("AutoscalerOptions", options, f"{where}.autoscalerOptions")
        if options.get("upscalingMode", "Default") not in UPSCALING_MODES:
            errors.append(f"{where}: upscalingMode must be one of {sorted(UPSCALING_MODES)}")
    return errors


def check_manifest(doc: dict[str, Any]) -> list[str]:
    if doc.get("apiVersion") != "ray.io/v1":
        return [f"apiVersion must be ray.io/v1, not {doc.get('apiVersion')}"]
    if not DNS_LABEL.match((doc.get("metadata") or {}).get("name", "")):
        return ["metadata.name must be a DNS-1123 label"]
    spec = doc.get("spec")
    if doc.get("kind") == "RayCluster":
        return check_cluster_spec(spec, "spec")
    if doc.get("kind") == "RayJob":
        errors = check_object("RayJobSpec", spec, "spec")
        if errors:
            return errors
        if not isinstance(spec.get("entrypoint"), str) or not spec["entrypoint"].strip():
            errors.append("spec.entrypoint must be a non-empty command")
        if spec.get("submissionMode", "K8sJobMode") not in SUBMISSION_MODES:
            errors.append(f"spec.submissionMode must be one of {sorted(SUBMISSION_MODES)}")
        if "rayClusterSpec" not in spec and "clusterSelector" not in spec:
            errors.append("spec needs rayClusterSpec or clusterSelector")
        if "rayClusterSpec" in spec:
            errors += check_cluster_spec(spec["rayClusterSpec"], "spec.rayClusterSpec")
        return errors
    return [f"unknown kind {doc.get('kind')}"]



@pytest.mark.parametrize("path", KUBERAY_YAMLS, ids=lambda p: p.name)
def test_kuberay_manifest_matches_crd_fields(path: Path) -> None:
    docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert docs
    for doc in docs:
        assert check_manifest(doc) == []
        spec = doc["spec"].get("rayClusterSpec", doc["spec"])
        assert spec["enableInTreeAutoscaling"] is True
        assert spec["rayVersion"] == "2.60.0"


def test_kuberay_rayjob_runs_a_sweep() -> None:
    job = yaml.safe_load((CLUSTERS / "kuberay" / "rayjob.yaml").read_text())
    words = job["spec"]["entrypoint"].split()
    assert words[:2] == ["raystudy", "sweep"] and "--storage" in words
    assert job["spec"]["shutdownAfterJobFinishes"] is True


@pytest.mark.parametrize("mutate, message", [
    (lambda s: s["headGroupSpec"]["rayStartParams"].update({"num-cpus": 0}), "strings"),
    (lambda s: s["workerGroupSpecs"][0].update({"minReplica": 1}), "unknown field"),
    (lambda s: s["workerGroupSpecs"][0].pop("groupName"), "needs 'groupName'"),
    (lambda s: s["headGroupSpec"]["template"]["spec"]["containers"][0].update(
        {"name": "Ray_Head"}), "DNS-1123"),
    (lambda s: s["workerGroupSpecs"][0].update({"replicas": 9}), "minReplicas <="),
])
def test_kuberay_checker_catches_mistakes(mutate: Any, message: str) -> None:
    doc = yaml.safe_load((CLUSTERS / "kuberay" / "raycluster.yaml").read_text())
    mutate(doc["spec"])
    assert any(message in error for error in check_manifest(doc))
