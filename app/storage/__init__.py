"""The storage seam: where documents come from and where results go, by URI.

A local path and an `s3://bucket/prefix` are two implementations of one narrow interface
(`ObjectStore`), chosen by the URI (`Stores.for_uri`), so no pipeline or worker code knows
which it has. Workers read documents through a bounded local cache (`DocumentCache`).
"""

from app.storage.base import ObjectStore, StoredObject, is_store_uri
from app.storage.cache import DocumentCache
from app.storage.stores import Stores

__all__ = ["DocumentCache", "ObjectStore", "StoredObject", "Stores", "is_store_uri"]
