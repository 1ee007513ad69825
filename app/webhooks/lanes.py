"""How many deliveries are in flight, in all and per receiver: a receiver that is slow (or
answers a byte at a time until the deadline) holds only its own lanes, so the deliveries to
every other receiver go on beside it."""

from __future__ import annotations

import threading
from collections import Counter
from urllib.parse import urlsplit


def receiver_of(url: str) -> str:
    """The receiver a URL reaches: its scheme, host and port (`https://hooks.example:443`)."""
    parts = urlsplit(url)
    default = 443 if parts.scheme == "https" else 80
    try:
        port = parts.port or default
    except ValueError:
        port = default
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


class Lanes:
    """At most `total` sends at once, at most `per_receiver` of them to one receiver."""

    def __init__(self, total: int, per_receiver: int) -> None:
        self.total = total
        self.per_receiver = per_receiver
        self._lock = threading.Lock()
        self._busy: Counter[str] = Counter()
        self._urls: Counter[str] = Counter()

    def free(self) -> int:
        with self._lock:
            return self.total - sum(self._busy.values())

    def full_urls(self) -> set[str]:
        """The URLs in flight whose receivers have no free lane (not worth fetching again)."""
        with self._lock:
            full = {r for r, n in self._busy.items() if n >= self.per_receiver}
            return {url for url in self._urls if receiver_of(url) in full}

    def take(self, url: str) -> bool:
        """Hold a lane for a send to `url`, when one is free."""
        receiver = receiver_of(url)
        with self._lock:
            if sum(self._busy.values()) >= self.total or self._busy[receiver] >= self.per_receiver:
                return False
            self._busy[receiver] += 1
            self._urls[url] += 1
            return True

    def give_back(self, url: str) -> None:
        with self._lock:
            self._busy[receiver_of(url)] -= 1
            self._urls[url] -= 1
            self._busy += Counter()  # drop the zeros
            self._urls += Counter()
