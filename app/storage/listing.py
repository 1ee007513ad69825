"""What a job's source names, a listing page at a time: the PDFs under a folder or a bucket
prefix, or the lines of a manifest (a `.txt`, local or stored, of one `s3://` URI a line).

A prefix of 100,000 objects is never held at once: each listing page (at most `page_size`
objects) is handed on before the next is asked for. What the job's `AccessPolicy` does not
admit is never asked of the store (see access.py).
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from app.errors import DocumentError, ObjectRefused
from app.storage.access import NOT_ALLOWED, AccessPolicy, in_listing, listing_prefix
from app.storage.base import StoredObject, is_store_uri, local_path
from app.storage.stores import Stores

_MAX_MANIFEST_BYTES = 64 * 2**20
EVERYWHERE = AccessPolicy()  # `folio run`: the operator's own credentials and choice


@dataclass(frozen=True)
class RefusedObject:
    """A manifest line whose object the store would not describe (missing, denied)."""

    uri: str
    error: DocumentError


Listed = StoredObject | RefusedObject


def is_manifest(source: str) -> bool:
    """A manifest is a text file (local, or an object) with one s3:// URI per line."""
    return source.lower().endswith(".txt")


def is_stored_source(source: str) -> bool:
    """Whether the source's documents are objects in a store (a prefix, a manifest's lines)."""
    return is_store_uri(source) or is_manifest(source)


def listed_pages(
    stores: Stores, source: str, page_size: int, policy: AccessPolicy = EVERYWHERE
) -> Iterator[Sequence[Listed]]:
    """The objects a source names, a listing page at a time: those under a folder or a prefix
    (taken as a folder: `s3://b/docs` is `docs/`), or a manifest's lines, each once. What
    `policy` does not admit is never asked of the store: a listed object outside it is left
    out, a manifest line outside it is a refused object (`not_allowed`). A source outside it
    raises PlaceRefused before anything is listed or read (a manifest is read whole)."""
    policy.check(source)
    if not is_manifest(source):
        prefix = listing_prefix(source) if is_store_uri(source) else source
        for listed in stores.for_uri(source).list_pages(prefix, page_size):
            if is_store_uri(source):
                listed = [o for o in listed if in_listing(o.uri, prefix)]
            yield [_storable(o) for o in listed if policy.admits(o.uri)]
        return
    page: list[Listed] = []
    for uri in _unique(_manifest_lines(stores, source)):
        page.append(_described(stores, uri, policy))
        if len(page) == page_size:
            yield page
            page = []
    if page:
        yield page


def _manifest_lines(stores: Stores, source: str) -> Iterator[str]:
    if is_store_uri(source):
        store = stores.for_uri(source)
        buffer = io.BytesIO()
        store.read(store.head(source), buffer, _MAX_MANIFEST_BYTES)
        try:
            text: Iterable[str] = buffer.getvalue().decode("utf-8").splitlines()
        except UnicodeDecodeError as exc:
            raise ObjectRefused("not_a_manifest", f"{source} is not UTF-8 text") from exc
    else:
        text = open(local_path(source), encoding="utf-8")  # noqa: SIM115 - closed below
    try:
        for line in text:
            uri = line.strip()
            if uri and not uri.startswith("#"):
                yield uri
    except UnicodeDecodeError as exc:
        raise ObjectRefused("not_a_manifest", f"{source} is not UTF-8 text") from exc
    finally:
        if hasattr(text, "close"):
            text.close()


def _unique(lines: Iterable[str]) -> Iterator[str]:
    """A manifest's lines without repeats: a URI listed twice is one document."""
    seen: set[str] = set()
    for line in lines:
        if line not in seen:
            seen.add(line)
            yield line


def _storable(stored: StoredObject) -> Listed:
    """The object, or a refusal when its key holds a NUL: no database text column (PostgreSQL's
    least of all) takes one, so the document is recorded under the key with `%00` for it."""
    if "\x00" not in stored.uri:
        return stored
    reason = "the object's key holds a NUL character, which Folio cannot record"
    return RefusedObject(
        stored.uri.replace("\x00", "%00"), DocumentError("unsupported_key", reason)
    )


def _described(stores: Stores, uri: str, policy: AccessPolicy) -> Listed:
    if "\x00" in uri:
        return _storable(StoredObject(uri, 0))
    if not is_store_uri(uri):
        return RefusedObject(uri, DocumentError("not_a_uri", f"not an s3:// URI: {uri!r}"))
    if not policy.admits(uri):  # refused before the store is asked: no answer tells it exists
        reason = "not under any of the server's allowed URIs"
        return RefusedObject(uri, DocumentError(NOT_ALLOWED, reason))
    try:
        return stores.for_uri(uri).head(uri)
    except ObjectRefused as exc:
        return RefusedObject(uri, exc)
