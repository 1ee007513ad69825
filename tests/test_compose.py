"""docker-compose.yml parses and wires the services distributed mode needs (no Docker here)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]


def services() -> dict[str, Any]:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return dict(compose["services"])


def test_compose_has_every_service_with_a_healthcheck() -> None:
    found = services()
    for name in ("postgres", "redis", "vllm", "api", "worker-cpu", "worker-gpu"):
        assert "healthcheck" in found[name], name
    assert found["migrate"]["command"] == ["db", "upgrade"]
    assert "fallback" in found["vllm-fallback"]["profiles"]


def test_workers_start_after_migrations_and_healthy_services() -> None:
    found = services()
    for name in ("api", "worker-cpu", "worker-gpu"):
        needs = found[name]["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully"
        assert needs["postgres"]["condition"] == "service_healthy"
        assert needs["redis"]["condition"] == "service_healthy"
    assert found["worker-gpu"]["depends_on"]["vllm"]["condition"] == "service_healthy"


def test_the_gpu_pieces_reserve_a_gpu_and_serve_the_primary_model() -> None:
    found = services()
    command = found["vllm"]["command"]
    assert "allenai/olmOCR-2-7B-1025-FP8" in command
    # the flags the default profile documents are on the server's command line
    from app.profiles import BUILTIN

    for flag in BUILTIN["olmocr2"].serve_flags:
        name, _, value = flag.partition(" ")
        assert name in command and command[command.index(name) + 1] == value.strip("'")
    # The primary server is vLLM's own image on its GPU defaults: Folio's client is the stop.
    assert found["vllm"]["image"].startswith("vllm/vllm-openai:v")
    assert "VLLM_USE_V2_MODEL_RUNNER" not in found["vllm"].get("environment", {})
    # The optional plugin image names the plugin on the command line (the only way it sees
    # real token ids under async scheduling) and serves on the V1 runner.
    dockerfile = (ROOT / "Dockerfile.vllm").read_text()
    assert "FROM vllm/vllm-openai:" in dockerfile
    assert "pip install --no-cache-dir --no-deps" in dockerfile
    assert "ENV VLLM_USE_V2_MODEL_RUNNER=0" in dockerfile
    assert '"--logits-processors", "app.vllm_plugin.processor:FolioLogitsProcessor"' in dockerfile
    devices = found["vllm"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["capabilities"] == ["gpu"]
    assert found["worker-gpu"]["command"][:3] == ["worker", "--queues", "gpu"]
    assert found["worker-cpu"]["command"][:3] == ["worker", "--queues", "cpu"]
    assert found["api"]["command"][0] == "serve"


def test_the_workers_environment_is_valid_settings() -> None:
    from app.settings import Settings

    env = services()["worker-gpu"]["environment"]
    settings = Settings(
        database_url=env["FOLIO_DATABASE_URL"],
        broker_url=env["FOLIO_BROKER_URL"],
        engine=env["FOLIO_ENGINE"],
        vlm_endpoints=json.loads(env["FOLIO_VLM_ENDPOINTS"]),
    )
    primary = settings.vlm_endpoints["primary"]
    assert primary.model == "allenai/olmOCR-2-7B-1025-FP8"
    profile = settings.profile_of("primary")
    assert profile.id == "olmocr2" and profile.status == "official"
    # No server-side stop on the engine thread: the client closes looping streams.
    assert (primary.engine_plugin, primary.server_repetition_detection) == (False, False)


def test_the_smoke_tests_variant_changes_only_vllm_the_gpu_and_the_port() -> None:
    """.ci/compose_smoke.sh brings up the shipped file, not a copy that drifted from it."""
    from tests.compose_stack import STANDIN_IMAGE, variant

    shipped = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    changed = variant(shipped, 18080, Path("/repo"))["services"]

    assert changed["vllm"]["image"] == STANDIN_IMAGE
    assert changed["vllm"]["healthcheck"] == shipped["services"]["vllm"]["healthcheck"]
    assert changed["api"]["ports"] == ["127.0.0.1:18080:8080"]

    def as_shipped(service: dict[str, Any]) -> dict[str, Any]:
        service = json.loads(json.dumps(service))
        service.get("deploy", {}).get("resources", {}).get("reservations", {}).pop("devices", 0)
        return {k: v for k, v in service.items() if k not in ("ports", "build")}

    assert set(changed) == set(shipped["services"])
    for name, service in changed.items():
        assert "devices" not in json.dumps(service), name
        assert service.get("build", "/repo") == "/repo", name
        if name != "vllm":
            assert as_shipped(service) == as_shipped(shipped["services"][name]), name
