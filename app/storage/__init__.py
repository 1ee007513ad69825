"""The storage seam: where documents come from and where results go, by URI.

A folder (a path or `file://`) and an `s3://bucket/prefix` are two implementations of one
narrow interface (`ObjectStore`: list, head, read as listed, write bytes or a file), chosen by
the URI (`Stores.for_uri`), so no pipeline or worker code knows which it has. A job's source
is listed here (`listing.py`: a folder, a prefix or a manifest, the `AccessPolicy` asked
first); workers read documents through a bounded local cache (`DocumentCache`); results go
to a target (`targets.py`). The options come from the settings once (`StorageOptions.of`).
"""

from app.storage.base import ObjectStore, StoredObject, is_store_uri
from app.storage.cache import DocumentCache
from app.storage.options import StorageOptions
from app.storage.stores import Stores

__all__ = [
    "DocumentCache",
    "ObjectStore",
    "StorageOptions",
    "StoredObject",
    "Stores",
    "is_store_uri",
]
