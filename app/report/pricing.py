"""Prices for cost reports, as plain values read from the settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.settings import Settings

CPU_ENGINES = frozenset({"textlayer", "tesseract"})


@dataclass(frozen=True)
class EndpointPrice:
    usd_per_gpu_hour: float | None = None
    gpus: int = 1
    usd_per_m_input: float | None = None
    usd_per_m_output: float | None = None

    @property
    def gpu_usd_per_second(self) -> float:
        return (self.usd_per_gpu_hour or 0.0) * self.gpus / 3600.0

    @property
    def priced(self) -> bool:
        prices = (self.usd_per_gpu_hour, self.usd_per_m_input, self.usd_per_m_output)
        return any(p is not None for p in prices)


@dataclass(frozen=True)
class Pricing:
    """Endpoint prices by endpoint name (and by base URL), and the CPU core-hour price."""

    endpoints: dict[str, EndpointPrice] = field(default_factory=dict)
    cpu_usd_per_hour: float | None = None

    def for_endpoint(self, endpoint: str | None) -> EndpointPrice | None:
        return self.endpoints.get(endpoint) if endpoint else None

    def gpu_priced(self) -> set[str]:
        """The endpoints priced by GPU time: the only ones whose cost other jobs share."""
        return {name for name, price in self.endpoints.items() if price.usd_per_gpu_hour}


def pricing_from_settings(settings: Settings) -> Pricing:
    endpoints: dict[str, EndpointPrice] = {}
    for name, ep in settings.vlm_endpoints.items():
        price = EndpointPrice(ep.usd_per_gpu_hour, ep.gpus, ep.usd_per_m_input, ep.usd_per_m_output)
        endpoints.setdefault(ep.base_url, price)
        endpoints[name] = price
    return Pricing(endpoints, settings.cpu_usd_per_hour)
