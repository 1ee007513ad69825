"""Searchable PDFs: each document back as the PDF it came from, the kept text laid over its
pages as invisible text (render mode 3, one glyphless font for every script, each word scaled
to its box), the way Tesseract's PDF renderer and OCRmyPDF write it; the original's bytes
untouched (the layer is an incremental update).

`writer` is the facade (per page: nothing where the page kept its own text layer, Tesseract's
words at their boxes, a model's words aligned with Tesseract's); `words` turns the kept
Markdown into the layer's words, `align` places them, `layer` writes the content stream,
`font` the glyphless font's objects, `document` is the PyMuPDF seam, `factory` makes the
writer from the settings."""
