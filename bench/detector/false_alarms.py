"""Healthy pages of the shapes behind today's false alarms (issue 39), built for the bench and
the tests from the shape of real public documents (each names where its shape comes from).

These are look-alikes, not the corpus: they pin each false-alarm class the issue names (a
machine-readable zone, a very wide table, sparse tables, one value across a wide row, figure
lists with counters, near-identical citations, device lines, repeated HTML header cells, badge
lines) so that a rule change that brings one back fails a test. The held-out false-alarm
rate is measured on the real corpus (`bench.detector.corpus`).
"""

from collections.abc import Callable
from dataclasses import dataclass

_INTRO = (
    "The following page was transcribed from the scanned original. Values are copied as they "
    "appear; empty cells are left empty.\n\n"
)


@dataclass(frozen=True, slots=True)
class HealthyShape:
    name: str
    origin: str  # the public document whose shape this follows
    text: str


def _mrz() -> str:
    # The ICAO 9303 specimen (TD3) and a TD1 card: `<` fills every unused position.
    return (
        "# PASSPORT\n\nType: P  Code: UTO  Passport No.: L898902C3\n\nSurname: ERIKSSON\n"
        "Given names: ANNA MARIA\nNationality: UTOPIAN\nDate of birth: 12 AUG 1974\n\n"
        "P<UTOERIKSSON<<ANNA<MARIA<<<<<<<<<<<<<<<<<<<\n"
        "L898902C36UTO7408122F1204159ZE184226B<<<<<10\n\n"
        "I<UTOD231458907<<<<<<<<<<<<<<<\n7408122F1204159UTO<<<<<<<<<<<6\n"
        "ERIKSSON<<ANNA<MARIA<<<<<<<<<<\n\n"
        "P<GBRPUDARSAN<<HENERT<<<<<<<<<<<<<<<<<<<<<<<\n"
        "7077979792GBR9505209M1704224<<<<<<<<<<<<<<00\n"
    )


def _wide_separator() -> str:
    # docling pads Markdown tables to the widest cell: a 24-column table with one long
    # heading has a separator row of well over a thousand dashes and bars.
    heads = [f"Q{i} {'2019' if i % 2 else '2020'} adjusted operating margin (%)" for i in range(24)]
    widths = [len(h) for h in heads]
    head = "| " + " | ".join(heads) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    rows = [
        "| "
        + " | ".join(f"{(r * 7 + c * 3) % 97 / 10:.1f}".ljust(w) for c, w in enumerate(widths))
        + " |"
        for r in range(6)
    ]
    return "\n".join([head, rule, *rows]) + "\n"


def _sparse_table() -> str:
    # A survey grid as converters write it: most cells empty, a mark here and there.
    cols = 18
    head = "| Plot | " + " | ".join(f"S{c}" for c in range(1, cols + 1)) + " |"
    rule = "|" + "---|" * (cols + 1)
    rows = []
    for r in range(40):
        cells = ["x" if (r * 5 + c) % 11 == 0 else "" for c in range(cols)]
        rows.append(f"| {r + 1} | " + " | ".join(cells) + " |")
    return "\n".join([head, rule, *rows]) + "\n"


def _one_value_row() -> str:
    # A converted spreadsheet row where one value spans (or repeats across) every column.
    cols = 30
    head = "| Item | " + " | ".join(f"{d:02d}" for d in range(1, cols + 1)) + " |"
    rule = "|" + "---|" * (cols + 1)
    rows = [
        "| Status | " + " | ".join(["Not applicable"] * cols) + " |",
        "| Shift | " + " | ".join(["Day"] * cols) + " |",
        "| Hours | " + " | ".join(["8.0"] * cols) + " |",
    ]
    return "\n".join([head, rule, *rows]) + "\n"


def _figure_list() -> str:
    # Lists of figures and converters' image placeholders count on, one per line (a page's
    # worth: 24; the real corpus's longest counting list is 15 lines).
    figures = "\n".join(f"![Figure {n}](images/figure_{n}.png)" for n in range(1, 25))
    images = "\n".join(f"<!-- image -->\nImage {n}" for n in range(1, 25))
    return "## List of figures\n\n" + figures + "\n\n" + images + "\n"


def _citations() -> str:
    # Reference lists of one author's series: the same citation with other volumes and pages.
    refs = "\n".join(
        f"[{n}] U.S. Geological Survey, Water Resources Data for Colorado, Water Year {1990 + n}, "
        f"Vol. {n % 3 + 1}, Report CO-{90 + n}-{n % 3 + 1}, pp. {10 * n}-{10 * n + 9}."
        for n in range(1, 31)
    )
    ibid = "\n".join(f"{n}. Ibid., p. {100 + 3 * n}." for n in range(31, 46))
    return "## References\n\n" + refs + "\n\n## Notes\n\n" + ibid + "\n"


def _device_lines() -> str:
    # Jetson and multi-GPU container run scripts pass each device node by hand.
    devices = " \\\n".join(f"  --device=/dev/nvidia{n}" for n in range(16))
    video = " \\\n".join(f"  --device /dev/video{n}:/dev/video{n}" for n in range(12))
    return (
        "```bash\ndocker run --rm --runtime=nvidia \\\n"
        + devices
        + " \\\n"
        + video
        + " \\\n  nvcr.io/nvidia/cuda:12.2.2-devel-ubuntu22.04 nvidia-smi\n```\n"
    )


def _html_headers() -> str:
    # An HTML table whose grouped header repeats the same sub-headers under every group.
    groups = 10
    top = (
        "<tr>" + "".join(f'<th colspan="3">Region {g}</th>' for g in range(1, groups + 1)) + "</tr>"
    )
    sub = "<tr>" + "<th>Male</th><th>Female</th><th>Total</th>" * groups + "</tr>"
    body = "".join(
        "<tr>" + "".join(f"<td>{(r * 13 + c) % 900}</td>" for c in range(3 * groups)) + "</tr>"
        for r in range(5)
    )
    return f"<table>{top}{sub}{body}</table>\n"


def _badges() -> str:
    # A README converted to Markdown: a line of shields.io badges.
    names = ["build", "coverage", "pypi", "python", "license", "downloads", "docs", "style"]
    badges = " ".join(
        f"[![{n}](https://img.shields.io/badge/{n}-passing-brightgreen.svg)](https://example.org/{n})"
        for n in names
    )
    return "# project\n\n" + badges + "\n\nA library for reading documents.\n"


SHAPES: tuple[tuple[str, str, Callable[[], str]], ...] = (
    ("machine-readable zone", "ICAO Doc 9303 specimen passport and card (TD3, TD1)", _mrz),
    (
        "wide table separator",
        "docling Markdown export of a 24-column table (padded)",
        _wide_separator,
    ),
    ("sparse table", "converted survey grid, most cells empty", _sparse_table),
    ("one value across a row", "converted spreadsheet row (merged value repeated)", _one_value_row),
    ("figure list with counters", "list of figures; docling image placeholders", _figure_list),
    ("near-identical citations", "USGS water-data report series; Ibid. notes", _citations),
    ("device lines", "docker run scripts (KhoiDOO/get-ready, Jetson L4T)", _device_lines),
    ("repeated HTML header cells", "HTML table with grouped sub-headers", _html_headers),
    ("badge lines", "README with shields.io badges", _badges),
)


def healthy_shapes() -> list[HealthyShape]:
    return [HealthyShape(name, origin, _INTRO + make()) for name, origin, make in SHAPES]
