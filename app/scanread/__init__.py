"""A second reader for scans beside Tesseract, and the per-page choice between the two.

RapidOCR (Apache-2.0) runs PaddleOCR's PP-OCR detection and recognition models on ONNX Runtime;
its wheel carries the models, so nothing is downloaded at run time. It is an optional extra
(`pip install -e .[scan]`, about 300 MB with ONNX Runtime and OpenCV). Tesseract reads every
scanned page first; only a page whose reading looks poor (`choice.needs_second_reading`) is read
again by RapidOCR, and the reading with more known words is kept (`choice.better`).
"""
