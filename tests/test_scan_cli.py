"""`folio scan` end to end through Typer: files in, verdicts out."""

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from app.cli.scan import scan

HEALTHY = (
    "The committee reviewed the annual budget in detail. Several members asked about the "
    "cost of repairs to the north bridge, and the plan was approved with two abstentions."
)
CYCLE = "1 teaspoon garlic powder\n1 teaspoon salt\n"
LOOPING = "Ingredients:\n" + CYCLE * 30


def run_scan(*args: str) -> tuple[int, str]:
    app = typer.Typer()
    app.command()(scan)
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_json_output_has_one_verdict_per_line(tmp_path: Path) -> None:
    samples = write_jsonl(
        tmp_path / "outputs.jsonl",
        [{"id": "page-1", "text": HEALTHY}, {"id": "page-2", "text": LOOPING}],
    )
    code, output = run_scan(str(samples), "--json")
    assert code == 0
    records = [json.loads(line) for line in output.splitlines()]
    assert [(r["id"], r["degenerate"]) for r in records] == [("page-1", False), ("page-2", True)]
    looping = records[1]
    assert looping["kind"] == "block" and looping["period"] == len(CYCLE)
    assert looping["onset"] == len("Ingredients:\n")
    assert looping["coverage"] > 0.3
    assert records[0]["kind"] is None and records[0]["onset"] is None


def test_table_output_lists_samples_and_the_rate(tmp_path: Path) -> None:
    (tmp_path / "good.md").write_text(HEALTHY, encoding="utf-8")
    (tmp_path / "bad.txt").write_text(LOOPING, encoding="utf-8")
    code, output = run_scan(str(tmp_path / "good.md"), str(tmp_path / "bad.txt"))
    assert code == 0
    assert "good.md" in output and "bad.txt" in output
    assert "Degeneration rate: 1/2 (50.0%)" in output


def test_custom_fields_and_folders(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "a.jsonl",
        [{"page": "p7", "content": LOOPING, "finish_reason": "length"}],
    )
    (tmp_path / "b.md").write_text(HEALTHY, encoding="utf-8")
    code, output = run_scan(str(tmp_path), "--field", "content", "--id-field", "page", "--json")
    assert code == 0
    records = {r["id"]: r for r in map(json.loads, output.splitlines())}
    assert set(records) == {"p7", "b.md"}
    assert records["p7"]["degenerate"] and records["p7"]["hit_cap"] is True
    assert not records["b.md"]["degenerate"]


def test_missing_text_field_is_an_input_error(tmp_path: Path) -> None:
    samples = write_jsonl(tmp_path / "bad.jsonl", [{"id": "x", "body": HEALTHY}])
    code, output = run_scan(str(samples))
    assert code == 2
    assert "no text field 'text'" in output


def test_unsupported_suffix_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "page.pdf").write_bytes(b"%PDF-1.7")
    code, output = run_scan(str(tmp_path / "page.pdf"))
    assert code == 2
    assert "expected .txt, .md or .jsonl" in output


def test_an_output_cut_at_the_cap_inside_a_repeated_block_is_flagged(tmp_path: Path) -> None:
    turn = (
        "<|im_start|>assistant\n## Pumping station\n\nThe new station on the east bank pumps "
        "water from the low fields into the river when the gates are closed.<|im_end|>\n"
    )
    text = "Intro page text.\n\n" + turn * 2 + turn[:50]
    samples = write_jsonl(
        tmp_path / "outputs.jsonl",
        [
            {"id": "cut", "text": text, "finish_reason": "length"},
            {"id": "ended", "text": text[: -len(turn[:50])], "finish_reason": "stop"},
        ],
    )
    code, output = run_scan(str(samples), "--json")
    records = {r["id"]: r for r in map(json.loads, output.splitlines())}
    assert code == 0
    assert records["cut"]["degenerate"] and records["cut"]["reason"] == "cap_loop"
    assert not records["ended"]["degenerate"]  # two whole copies, and the model stopped
