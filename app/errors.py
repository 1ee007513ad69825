"""Folio's exception tree. Each carries a failure category that lands on the page or document."""

from __future__ import annotations


class FolioError(Exception):
    """Base of every error Folio raises on purpose."""

    category = "error"


class ConfigError(FolioError):
    """Settings that cannot work (unknown plan, missing endpoint...)."""

    category = "config"


class DocumentError(FolioError):
    """A document that cannot be processed at all: corrupt, encrypted, empty, not a PDF, too big."""

    category = "document"

    def __init__(self, category: str, reason: str) -> None:
        super().__init__(reason)
        self.category = category
        self.reason = reason


class RenderError(FolioError):
    """One page failed to rasterise; the rest of its document goes on."""

    category = "render"


class EngineError(FolioError):
    """An engine call failed for a reason that retrying the same call will not fix."""

    category = "engine"


class TransportError(FolioError):
    """The engine could not be reached or answered 5xx; the same call may work later."""

    category = "transport"


class TrainInputError(FolioError):
    """Training input that cannot work: no pairs, missing images, a base that is not a VLM."""

    category = "train-input"


class TrainMemoryError(TrainInputError):
    """A training run that would not fit the device's free memory, even at one pair a step."""

    category = "train-memory"


class MissingExtraError(FolioError):
    """An optional part of Folio was asked for but its extra is not installed."""

    category = "missing-extra"


class StoreUnavailable(FolioError):
    """The object store could not be reached or answered 5xx; the same request may work later
    (the page stays open and its task is retried, as when the database is down)."""

    category = "store_unavailable"


class WriteFailed(StoreUnavailable):
    """A file could not be written where it goes (a full disk, a read-only folder). What was
    there before is kept whole; writing again once there is room may work."""

    category = "write_failed"


class ObjectRefused(DocumentError):
    """An object the store will not give as it was listed: missing, denied, changed, too big.
    Its category lands on the document (at ingest) or on its pages (on a worker)."""


NOT_ALLOWED = "not_allowed"


class PlaceRefused(FolioError, ValueError):
    """A URI outside the allowed prefixes, or a URL to an address the settings refuse."""

    category = NOT_ALLOWED
