"""What an OpenAI-compatible server says about itself: the models it serves, their context
length, the loop stops it offers, and whether a profile's server-side processor is loaded."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

import httpx

from app.engines.vlm_stops import EndpointStops, probe_stops
from app.errors import ConfigError
from app.profiles import Profile, resolve_profile
from app.profiles.diagnosis import Finding, diagnose
from app.settings import Settings, VlmEndpoint

log = logging.getLogger(__name__)

# A value the n-gram processors refuse (DeepSeek's NGramPerReqLogitsProcessor.validate_params
# rejects a non-positive size): a 400 naming the field means the processor is loaded.
_PROCESSOR_PROBES = {"ngram_processor": {"ngram_size": 0}}


@dataclass(frozen=True)
class ServedModel:
    id: str
    max_model_len: int | None = None


@dataclass
class ServerFacts:
    """The answers of one server; `error` when it could not be asked."""

    reachable: bool = True
    error: str | None = None
    models: list[ServedModel] = field(default_factory=list)
    stops: EndpointStops = field(default_factory=EndpointStops)
    processors: dict[str, bool] = field(default_factory=dict)


def inspect_server(
    base_url: str, model: str, probes: list[str], api_key: str | None = None
) -> ServerFacts:
    """Ask the server at `base_url` (with /v1) what it serves and offers."""
    return asyncio.run(_inspect(base_url, model, probes, api_key))


async def _inspect(
    base_url: str, model: str, probes: list[str], api_key: str | None
) -> ServerFacts:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(60, connect=10)) as client:
        try:
            response = await client.get(base_url.rstrip("/") + "/models")
            response.raise_for_status()
            facts = ServerFacts(models=_served(response.json()))
            model = model or (facts.models[0].id if facts.models else "")
            facts.stops = await probe_stops(client, base_url, model)
            for probe in probes:
                facts.processors[probe] = await _processor_loaded(client, base_url, model, probe)
        except (httpx.HTTPError, ValueError) as exc:
            return ServerFacts(reachable=False, error=f"{type(exc).__name__}: {exc}")
    return facts


def _served(payload: dict[str, Any]) -> list[ServedModel]:
    return [
        ServedModel(str(entry.get("id")), entry.get("max_model_len"))
        for entry in payload.get("data") or []
    ]


async def _processor_loaded(
    client: httpx.AsyncClient, base_url: str, model: str, probe: str
) -> bool:
    xargs = _PROCESSOR_PROBES[probe]
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "probe"}],
        "max_tokens": 1,
        "vllm_xargs": xargs,
    }
    response = await client.post(base_url.rstrip("/") + "/chat/completions", json=body)
    return response.status_code == 400 and next(iter(xargs)) in response.text


async def warn_missing_processors(
    client: httpx.AsyncClient, endpoint: VlmEndpoint, profile: Profile
) -> list[str]:
    """The profile's server-side processors the server lacks, each logged as a warning."""
    missing: list[str] = [
        probe
        for probe in profile.probes
        if not await _processor_loaded(client, endpoint.base_url, endpoint.model, probe)
    ]
    for probe in missing:
        log.warning(
            "%s: the server at %s does not run the %s profile %s needs against loops (%s)",
            endpoint.model,
            endpoint.base_url,
            probe,
            profile.id,
            " ".join(f for f in profile.serve_flags if "logits-processors" in f) or "see docs",
        )
    return missing


@dataclass(frozen=True)
class Checkup:
    """What `folio doctor` says: the server, model and profile checked, and the findings."""

    base_url: str
    model: str
    profile_tag: str
    findings: list[Finding]


def check_endpoint(
    settings: Settings, endpoint: str, model: str | None, profile: str | None
) -> Checkup:
    """Check a configured endpoint (by name) or a server URL against its profile."""
    configured = settings.vlm_endpoints.get(endpoint)
    if configured is None and not endpoint.startswith(("http://", "https://")):
        raise ConfigError(f"{endpoint!r} is neither a configured endpoint nor a URL")
    base_url = configured.base_url if configured else endpoint
    key = configured.api_key if configured else None
    name = model or (configured.model if configured else "")
    facts = inspect_server(base_url, name, [], key)
    if not facts.reachable:
        unreachable = Finding("problem", f"the server cannot be asked: {facts.error}")
        return Checkup(base_url, name, "-", [unreachable])
    name = name or (facts.models[0].id if facts.models else "")
    chosen = resolve_profile(
        profile or (configured.profile if configured else None), name, settings.profiles
    )
    if chosen.probes:
        facts = inspect_server(base_url, name, list(chosen.probes), key)
    served = {m.id: m.max_model_len for m in facts.models}
    stops = (facts.stops.plugin, bool(facts.stops.abort_path), facts.stops.repetition_detection)
    limit = configured.max_tokens if configured else None
    findings = diagnose(chosen, name, served, stops, facts.processors, limit)
    return Checkup(base_url, name, chosen.tag, findings)
