"""The string values of a JSON answer, decoded as they stream (`DetectorConfig.json_strings`).

Profiles that answer in JSON (dots.ocr's layout cells, Dharma's `header`/`text` keys) put the
page's text in string values: a loop there is written with escaped line breaks (`\\n`), so the
line and structure trackers, which read real line breaks, never see its lines, and a parser
that only checks that the JSON is valid never sees it at all. `JsonStringReader` turns the
stream into the text of its string values (keys left out), escapes decoded, each value ended
by a blank line, which a second detector reads as text of its own. Only the values of text
keys (`TEXT_KEYS`) are read: the other values are metadata that each record repeats. It keeps
a few bytes of state (inside a string or not, a pending escape, the open containers, the last
key), so a chunk costs one regex scan of its length.
"""

import re
from collections import deque

_SPECIAL_RE = re.compile(r'["\\{}\[\],:]')
_IN_STRING_RE = re.compile(r'["\\]')
_ESCAPES = {"n": "\n", "t": "\t", "r": "\n", "b": " ", "f": " ", "/": "/", '"': '"', "\\": "\\"}
_MAX_DEPTH = 64
_MAX_KEY = 64
# Keys whose values are the page's text in the built-in JSON profiles (dots.ocr's `text`,
# Dharma's `header`/`text`/`margin`/`footer`) and in common layout formats. Other values are
# metadata (ids, file names, categories, boxes) that every record repeats by design.
TEXT_KEYS = frozenset({"text", "content", "header", "footer", "margin", "markdown", "html"})
_ANCHORS = 4096


# An answer opens as JSON: an object with a key (or empty), or an array of objects, strings
# or arrays. A Markdown answer may open with `[` (a link, `[1]` a reference), never like this.
_OPENS_AS_JSON = re.compile(r'\s*(?:\{\s*["}]|\[\s*[\[{"\]])')
_NOT_YET_KNOWN = re.compile(r"\s*(?:[\[{]\s*)?")
_DECIDE_WITHIN = 64


def opens_as_json(text: str) -> bool | None:
    """Whether a stream that starts with `text` is a JSON answer; None while it cannot tell
    (only blanks and an opening bracket so far)."""
    if _OPENS_AS_JSON.match(text):
        return True
    if len(text) < _DECIDE_WITHIN and _NOT_YET_KNOWN.fullmatch(text):
        return None
    return False


class JsonStringReader:
    """Decodes the string values of a streamed JSON text; maps decoded offsets back to raw."""

    def __init__(self) -> None:
        self._in_string = False
        self._is_value = False  # the open string is a value (not a key)
        self._watched = False  # ... the value of a text key: its text is produced
        self._key: list[str] = []  # the key being read, and the last one read
        self._last_key = ""
        self._escape = ""  # an escape cut by the chunk boundary (`\\`, `\\u00`)
        self._containers: list[str] = []  # open `{` and `[`
        self._expect_key = False  # the next string in the open object is a key
        self._raw = 0  # raw characters read
        self._decoded = 0  # decoded characters produced
        # (decoded offset, raw offset) where a run of decoded text starts: a value's start
        # and every chunk inside it; offsets between two anchors are read as one to one.
        self._anchors: deque[tuple[int, int]] = deque(maxlen=_ANCHORS)

    def feed(self, chunk: str) -> str:
        """The decoded text of the string values in `chunk` (and the rest of a cut escape)."""
        out: list[str] = []
        position = 0
        while position < len(chunk):
            if self._in_string:
                position = self._read_string(chunk, position, out)
            else:
                found = _SPECIAL_RE.search(chunk, position)
                if found is None:
                    break
                position = found.end()
                self._structure(found.group(), self._raw + found.start(), out)
        self._raw += len(chunk)
        return "".join(out)

    def raw_offset(self, decoded: int) -> int:
        """The raw offset of a decoded offset (exact at anchors, one to one between them)."""
        best = (0, 0)
        for anchor in reversed(self._anchors):
            if anchor[0] <= decoded:
                best = anchor
                break
        return best[1] + (decoded - best[0])

    def _structure(self, char: str, at: int, out: list[str]) -> None:
        containers = self._containers
        if char == '"':
            self._in_string = True
            self._is_value = not (containers and containers[-1] == "{" and self._expect_key)
            self._watched = self._is_value and self._last_key in TEXT_KEYS
            if self._watched:
                self._anchors.append((self._decoded, at + 1))
            elif not self._is_value:
                self._key.clear()
        elif char in "{[":
            if len(containers) < _MAX_DEPTH:
                containers.append(char)
            self._expect_key = char == "{"
        elif char in "}]":
            if containers:
                containers.pop()
            self._expect_key = False
        elif char == ",":
            self._expect_key = bool(containers) and containers[-1] == "{"
        elif char == ":":
            self._expect_key = False

    def _read_string(self, chunk: str, position: int, out: list[str]) -> int:
        if self._watched and position == 0:
            self._anchors.append((self._decoded, self._raw))
        while position < len(chunk):
            if self._escape:
                position = self._read_escape(chunk, position, out)
                continue
            found = _IN_STRING_RE.search(chunk, position)
            end = len(chunk) if found is None else found.start()
            if self._watched and end > position:
                self._emit(chunk[position:end], out)
            elif not self._is_value and len(self._key) < _MAX_KEY:
                self._key.append(chunk[position:end])
            if found is None:
                return len(chunk)
            if found.group() == '"':
                self._in_string = False
                if self._watched:
                    self._emit("\n\n", out)  # a value ends: a blank line, neutral to lines
                elif not self._is_value:
                    self._last_key = "".join(self._key).lower()
                return found.end()
            self._escape = "\\"
            position = found.end()
        return position

    def _read_escape(self, chunk: str, position: int, out: list[str]) -> int:
        pending = self._escape + chunk[position : position + 6 - len(self._escape)]
        if len(pending) < 2 or (pending[1] == "u" and len(pending) < 6):
            self._escape = pending
            return len(chunk)  # the escape goes on in the next chunk
        size = 6 if pending[1] == "u" else 2
        taken = size - len(self._escape)
        self._escape = ""
        if pending[1] == "u":
            try:
                text = chr(int(pending[2:6], 16))
            except ValueError:
                text = " "
        else:
            text = _ESCAPES.get(pending[1], pending[1])
        if self._watched:
            self._emit(text, out)
        return position + taken

    def _emit(self, text: str, out: list[str]) -> None:
        out.append(text)
        self._decoded += len(text)
