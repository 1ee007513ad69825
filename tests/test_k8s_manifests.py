"""The Kubernetes manifests (deploy/k8s): rendered by `kubectl kustomize`, every object
validated against the Kubernetes API schemas (kubernetes-validate, strict: a field the API
lacks is refused) and the ScaledObjects against the hand-checked subset of KEDA's CRD; the
names and flags in them held to Folio's own settings, queues and profiles, and the Redis lists
KEDA reads checked against the lists Celery really fills."""

from __future__ import annotations

import copy
import shlex
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import redis
import yaml

from app.distributed.queue import Enqueuer, make_celery, queue_name
from app.profiles.registry import resolve_profile
from app.settings import Settings
from tests.conftest import REDIS_URL
from tests.k8s_support import K8S, find, load_generator, render

REPO = Path(__file__).resolve().parents[1]
KEDA_SCHEMA = K8S / "schemas" / "keda-scaledobject-v2.20.2-subset.yaml"
# The oldest Kubernetes the manifests are for (native sidecars: init containers with
# restartPolicy Always, beta and on by default since 1.29) and the newest schemas shipped.
KUBERNETES_VERSIONS = ("1.29.0", kubernetes_validate.latest_version())


@pytest.fixture(scope="module")
def rendered() -> list[dict[str, Any]]:
    return render()


def keda_validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(yaml.safe_load(KEDA_SCHEMA.read_text()))


def configmap_env(objects: list[dict[str, Any]]) -> dict[str, str]:
    return dict(find(objects, "ConfigMap", "folio-config")["data"])


@pytest.fixture
def deployed_settings(
    rendered: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> Iterator[Settings]:
    """Settings as a pod builds them: the ConfigMap's variables and the Secrets' (stand-ins
    for the operator's URLs); conftest has cleared this shell's FOLIO_ variables and points
    the config file at one that does not exist."""
    for key, value in configmap_env(rendered).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("FOLIO_DATABASE_URL", "postgresql+psycopg://folio@db/folio")
    monkeypatch.setenv("FOLIO_BROKER_URL", "redis://redis:6379/0")
    yield Settings()


def test_the_kustomization_renders_every_role(rendered: list[dict[str, Any]]) -> None:
    kinds = sorted((o["kind"], o["metadata"]["name"]) for o in rendered)
    assert kinds == [
        ("ConfigMap", "folio-config"),
        ("Deployment", "folio-api"),
        ("Deployment", "folio-gpu"),
        ("Deployment", "folio-worker-cpu"),
        ("Job", "folio-migrate"),
        ("NetworkPolicy", "folio-api"),
        ("NetworkPolicy", "folio-default-deny"),
        ("NetworkPolicy", "folio-dns"),
        ("NetworkPolicy", "folio-migrate"),
        ("NetworkPolicy", "folio-workers"),
        ("ScaledObject", "folio-gpu"),
        ("ScaledObject", "folio-worker-cpu"),
        ("Service", "folio-api"),
    ]


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_every_kubernetes_object_validates_strictly(
    rendered: list[dict[str, Any]], version: str
) -> None:
    checked = 0
    for obj in rendered:
        if obj["apiVersion"].startswith("keda.sh/"):
            continue
        kubernetes_validate.validate(obj, version, strict=True)
        checked += 1
    assert checked == 11


def test_the_kubernetes_validation_refuses_a_misspelt_field(
    rendered: list[dict[str, Any]],
) -> None:
    gpu = copy.deepcopy(find(rendered, "Deployment", "folio-gpu"))
    gpu["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(gpu, KUBERNETES_VERSIONS[0], strict=True)


def test_the_scaled_objects_validate_against_keda_schema(rendered: list[dict[str, Any]]) -> None:
    validator = keda_validator()
    scaled = [o for o in rendered if o["kind"] == "ScaledObject"]
    assert len(scaled) == 2
    for obj in scaled:
        validator.validate(obj)
        spec = obj["spec"]
        # the CRD's own x-kubernetes-validations rule, which a JSON schema cannot say
        assert spec.get("minReplicaCount", 0) <= spec.get("maxReplicaCount", 100)
        # a formula naming a trigger that is not there fails in KEDA at reconcile time
        names = {t["name"] for t in spec["triggers"]}
        terms = {
            term.strip() for term in spec["advanced"]["scalingModifiers"]["formula"].split("+")
        }
        assert terms == names


@pytest.mark.parametrize(
    "mutate",
    [
        lambda so: so["spec"]["triggers"][0]["metadata"].update(listname="x"),  # misspelt
        lambda so: so["spec"].update(minReplicaCount=-1),
        lambda so: so["spec"]["advanced"]["scalingModifiers"].update(metricType="Utilization"),
        lambda so: so["spec"].update(scaleTargetRefs={"name": "x"}),
    ],
    ids=["misspelt-redis-key", "negative-min", "utilization-modifier", "unknown-field"],
)
def test_the_keda_schema_refuses_what_keda_would(
    rendered: list[dict[str, Any]], mutate: Any
) -> None:
    obj = copy.deepcopy(find(rendered, "ScaledObject", "folio-gpu"))
    mutate(obj)
    with pytest.raises(jsonschema.ValidationError):
        keda_validator().validate(obj)


def test_the_scaled_objects_are_generated_from_folio_queue_names() -> None:
    generator = load_generator()
    assert generator.main(["--check"]) == 0
    # another prefix renders other lists: the check above would fail on a drift
    other = generator.render(Settings(broker_url="redis://x:6379/0", queue_prefix="elsewhere"))
    assert other != (K8S / "base" / "scaledobjects.yaml").read_text(encoding="utf-8")
    assert "elsewhere:elsewhere.gpu:9" in other


def test_each_queue_scales_the_deployment_that_consumes_it(
    rendered: list[dict[str, Any]], deployed_settings: Settings
) -> None:
    for obj in (o for o in rendered if o["kind"] == "ScaledObject"):
        target = find(rendered, "Deployment", obj["spec"]["scaleTargetRef"]["name"])
        # KEDA resolves *FromEnv from the target's first container unless told otherwise
        worker = target["spec"]["template"]["spec"]["containers"][0]
        assert worker["name"] == "worker"
        assert "envSourceContainerName" not in obj["spec"]["scaleTargetRef"]
        args = worker["args"]
        kind = args[args.index("--queues") + 1]
        assert obj["metadata"]["labels"]["folio.dev/queue"] == queue_name(deployed_settings, kind)
        # the scaler reads the Redis address from the target's container
        assert "REDIS_ADDRESS" in {e["name"] for e in worker["env"]}
        concurrency = args[args.index("--concurrency") + 1]
        assert obj["spec"]["advanced"]["scalingModifiers"]["target"] == concurrency


def trigger_lists(obj: dict[str, Any]) -> list[str]:
    return [t["metadata"]["listName"] for t in obj["spec"]["triggers"]]


@pytest.mark.redis
def test_keda_reads_the_lists_celery_fills(prefix: str) -> None:
    """Tasks sent by Folio's own Enqueuer at several priorities land in exactly the lists the
    generated triggers name, and in no other list of the prefix."""
    generator = load_generator()
    settings = Settings(broker_url=REDIS_URL, queue_prefix=prefix)
    by_queue = {
        s.kind: trigger_lists(generator.scaled_object(settings, s)) for s in generator.SCALING
    }
    enqueuer = Enqueuer(settings, make_celery(settings))
    sent = {"gpu": 0, "cpu": 0}
    for priority in (0, 4, 9):
        sent["gpu"] += enqueuer.process_pages([1, 2], "vlm", priority)  # one task a page
        sent["cpu"] += enqueuer.split_documents([7], priority)
    enqueuer.finalize_job("job")
    sent["cpu"] += 1
    client = redis.Redis.from_url(REDIS_URL)
    try:
        for kind, lists in by_queue.items():
            assert sum(int(client.llen(key)) for key in lists) == sent[kind], kind
        named = {key for lists in by_queue.values() for key in lists}
        filled = {k.decode() for k in client.scan_iter(f"{prefix}:*") if client.type(k) == b"list"}
        assert filled and filled <= named
    finally:
        client.close()


def test_the_config_map_is_valid_folio_settings(deployed_settings: Settings) -> None:
    endpoint = deployed_settings.vlm_endpoints["primary"]
    assert endpoint.base_url == "http://127.0.0.1:8000/v1"  # the pod's own vLLM sidecar
    assert deployed_settings.engine == "vlm"


def test_unknown_settings_in_the_config_map_are_refused(
    rendered: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    endpoints = configmap_env(rendered)["FOLIO_VLM_ENDPOINTS"].replace('"profile"', '"profil"')
    monkeypatch.setenv("FOLIO_VLM_ENDPOINTS", endpoints)
    with pytest.raises(ValueError):
        Settings()


def pod(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    spec: dict[str, Any] = find(objects, "Deployment", name)["spec"]["template"]["spec"]
    return spec


def test_vllm_runs_the_profile_flags_on_a_gpu(
    rendered: list[dict[str, Any]], deployed_settings: Settings
) -> None:
    endpoint = deployed_settings.vlm_endpoints["primary"]
    profile = resolve_profile(endpoint.profile, endpoint.model, deployed_settings.profiles)
    vllm, probe = pod(rendered, "folio-gpu")["initContainers"]
    assert (vllm["name"], vllm["restartPolicy"], probe["name"]) == ("vllm", "Always", "close-probe")
    args = vllm["args"]
    assert args[args.index("--model") + 1] == endpoint.model
    for flag in profile.serve_flags:
        words = shlex.split(flag)
        at = args.index(words[0])
        assert args[at : at + len(words)] == words, flag
    assert vllm["resources"]["limits"]["nvidia.com/gpu"] == "1"
    port = vllm["ports"][0]["containerPort"]
    assert endpoint.base_url.startswith(f"http://127.0.0.1:{port}/")
    for role in ("folio-api", "folio-worker-cpu"):
        assert "nvidia.com/gpu" not in str(pod(rendered, role))


def test_vllm_matches_docker_compose(rendered: list[dict[str, Any]]) -> None:
    """One image and one command line for the GPU server, whichever way it is deployed."""
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))
    vllm = pod(rendered, "folio-gpu")["initContainers"][0]
    assert vllm["image"] == compose["services"]["vllm"]["image"]
    assert vllm["args"] == compose["services"]["vllm"]["command"]


def test_secrets_are_referenced_never_rendered(rendered: list[dict[str, Any]]) -> None:
    assert not [o for o in rendered if o["kind"] == "Secret"]
    text = yaml.safe_dump_all(rendered)
    assert "postgresql" not in text and "redis://" not in text


def test_the_gpu_worker_keeps_more_pages_in_flight_than_vllm_has_slots(
    rendered: list[dict[str, Any]], deployed_settings: Settings
) -> None:
    """As measured (docs/deploying.md, "Workers per GPU"): more pages in flight than
    --max-num-seqs, and an endpoint cap that does not hold the worker below its threads."""
    spec = pod(rendered, "folio-gpu")
    vllm_args, worker_args = spec["initContainers"][0]["args"], spec["containers"][0]["args"]
    slots = int(vllm_args[vllm_args.index("--max-num-seqs") + 1])
    threads = int(worker_args[worker_args.index("--concurrency") + 1])
    assert threads > slots
    assert deployed_settings.vlm_endpoints["primary"].max_concurrency >= threads


def test_every_worker_serves_its_metrics_on_the_port_folio_uses(
    rendered: list[dict[str, Any]], deployed_settings: Settings
) -> None:
    """Each `folio worker` container names the port of its /metrics (worker_metrics_port), and
    runs the threads pool, the one whose pages count in the process that serves them."""
    workers = [
        container
        for role in ("folio-worker-cpu", "folio-gpu")
        for container in pod(rendered, role)["containers"]
        if container["args"][0] == "worker"
    ]
    assert len(workers) == 2
    port = deployed_settings.worker_metrics_port
    for container in workers:
        assert container["ports"] == [{"name": "folio-metrics", "containerPort": port}]
        args = container["args"]
        assert "--pool" not in args or args[args.index("--pool") + 1] == "threads"


# The hardening a standard check asks of every workload (the Pod Security Standards'
# "restricted" profile, and what kube-linter and checkov add to it: a read-only root, no
# service-account token, pinned images, network policies). Issue 62.
WORKLOADS = ("folio-api", "folio-worker-cpu", "folio-gpu", "folio-migrate")


def pod_of(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    kind = "Job" if name == "folio-migrate" else "Deployment"
    spec: dict[str, Any] = find(objects, kind, name)["spec"]["template"]["spec"]
    return spec


def containers_of(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [*spec.get("initContainers", []), *spec["containers"]]


@pytest.mark.parametrize("name", WORKLOADS)
def test_every_pod_runs_restricted(rendered: list[dict[str, Any]], name: str) -> None:
    spec = pod_of(rendered, name)
    assert spec["automountServiceAccountToken"] is False
    pod_context = spec["securityContext"]
    assert pod_context["runAsNonRoot"] is True and pod_context["runAsUser"] != 0
    assert pod_context["seccompProfile"] == {"type": "RuntimeDefault"}
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    assert all(set(v) == {"name", "emptyDir"} for v in volumes.values())  # nothing of the node's
    for container in containers_of(spec):
        context = container["securityContext"]
        assert context["allowPrivilegeEscalation"] is False, container["name"]
        assert context["readOnlyRootFilesystem"] is True, container["name"]
        assert context["capabilities"] == {"drop": ["ALL"]}, container["name"]
        assert "privileged" not in context and "runAsUser" not in context
        mounts = {m["mountPath"]: m["name"] for m in container.get("volumeMounts", [])}
        assert "/tmp" in mounts, container["name"]  # what is writable is an emptyDir
        assert set(mounts.values()) <= set(volumes)


def test_the_folio_image_runs_as_the_pods_user() -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "useradd --create-home --uid 10001 folio" in dockerfile
    assert "USER 10001:10001" in dockerfile


def test_every_image_is_pinned_and_folios_is_this_release(rendered: list[dict[str, Any]]) -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    images = {
        container["image"]
        for name in WORKLOADS
        for container in containers_of(pod_of(rendered, name))
    }
    assert images == {f"folio:{version}", "vllm/vllm-openai:v0.32.0"}
    assert not [i for i in images if i.endswith(":latest") or ":" not in i]


def policies(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "NetworkPolicy"]


def selects(policy: dict[str, Any], labels: dict[str, str]) -> bool:
    selector = policy["spec"]["podSelector"]
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    return all(labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", []))


def allowed_ports(objects: list[dict[str, Any]], name: str, direction: str) -> set[int]:
    """The TCP ports the policies open to `name`'s pods, `ingress` or `egress`."""
    labels = find_workload(objects, name)["spec"]["template"]["metadata"]["labels"]
    return {
        port["port"]
        for policy in policies(objects)
        if selects(policy, labels)
        for rule in policy["spec"].get(direction, [])
        for port in rule.get("ports", [])
        if port["protocol"] == "TCP"
    }


def find_workload(objects: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return find(objects, "Job" if name == "folio-migrate" else "Deployment", name)


def test_the_network_is_denied_but_for_what_each_component_needs(
    rendered: list[dict[str, Any]],
) -> None:
    deny = find(rendered, "NetworkPolicy", "folio-default-deny")["spec"]
    assert deny == {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}
    ingress = {name: allowed_ports(rendered, name, "ingress") for name in WORKLOADS}
    egress = {name: allowed_ports(rendered, name, "egress") for name in WORKLOADS}
    assert ingress == {
        "folio-api": {8080},
        "folio-worker-cpu": {9464},
        "folio-gpu": {9464},  # never vLLM's 8000: its worker asks it on localhost
        "folio-migrate": set(),
    }
    assert egress["folio-migrate"] == {53, 5432}
    for name in ("folio-api", "folio-worker-cpu", "folio-gpu"):
        assert egress[name] == {53, 80, 443, 5432, 6379}, name
    for policy in policies(rendered):  # the web, but never the cloud's metadata service
        for rule in policy["spec"].get("egress", []):
            for peer in rule.get("to", []):
                assert "169.254.0.0/16" in peer["ipBlock"]["except"]


def test_vllm_takes_an_api_key_from_a_secret_and_folio_sends_it(
    rendered: list[dict[str, Any]], deployed_settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = pod(rendered, "folio-gpu")
    vllm, probe = spec["initContainers"]
    worker = spec["containers"][0]
    key = {"secretKeyRef": {"name": "folio-vllm", "key": "api-key"}}  # not optional
    assert {"name": "VLLM_API_KEY", "valueFrom": key} in vllm["env"]
    for container in (probe, worker):
        sent = {"name": "FOLIO_VLM_ENDPOINTS__PRIMARY__API_KEY", "valueFrom": key}
        assert sent in container["env"], container["name"]
    assert deployed_settings.vlm_endpoints["primary"].api_key is None  # without the Secret
    monkeypatch.setenv("FOLIO_VLM_ENDPOINTS__PRIMARY__API_KEY", "from-the-secret")
    assert Settings().vlm_endpoints["primary"].api_key == "from-the-secret"
