"""Where each word and line of a page's text sits, in PDF points and in page pixels."""

from app.positions.model import PageGeometry, Placed, positions_json

__all__ = ["PageGeometry", "Placed", "positions_json"]
