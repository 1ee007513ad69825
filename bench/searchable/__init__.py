"""Searchable PDFs against OCRmyPDF (`python -m bench searchable`): the text a reader copies out
of each, its boxes, its size and its time, on pages whose truth is known."""
