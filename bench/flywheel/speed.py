"""`python -m bench flywheel-speed`: where a page-arm's time goes on the vLLM CPU server, and
what the server's settings buy, side by side in one run.

The flywheel-arms bench reads every page once per arm (greedy, ladder, repetition penalty,
n-gram guard, each tuned model) through `folio eval` on the vLLM CPU server with the committed
6.2 M-parameter base. This bench reads the same held-out pages with the base's arms under each
server configuration below, one server start each, and reports per page-arm: wall seconds,
CPU seconds by process (Folio's client, vLLM's API server, engine core and model worker, read
from /proc, so the figure holds on a loaded machine where wall time does not), tokens, and
whether every first attempt's text is the same as the first configuration's (same model, same
decoding: only the server's bookkeeping may change).

- `committed`: the server as the arms bench first started it (vLLM's CPU defaults: KV blocks
  of 128 tokens, one streamed chunk per token, 128 sequences a step), 32 requests in flight;
- `cached`: KV blocks of 32 tokens, so that a page read again (the next arm, a ladder rung)
  finds its whole image in the prefix cache and skips the vision encoder and the prefill
  (with 128-token blocks the uncached tail of every prompt still holds image tokens, and vLLM
  runs the encoder again), and chunks of 16 tokens (`--stream-interval`);
- `batched`: the arms bench's server now (`arms.SERVER_ARGS`): `cached` with 256 sequences
  admitted to a decode step, and 256 pages in flight, so a step's fixed work is shared by
  more sequences.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bench.environment import REPO, describe, machine_info, write_results
from bench.flywheel import arms, floor, pages
from bench.flywheel.model import COMMITTED, assemble
from bench.flywheel.rows import per_page
from bench.flywheel.run import fresh_folder


@dataclass(frozen=True)
class Config:
    server_args: tuple[str, ...]
    concurrency: int


CONFIGS = {
    "committed": Config((), 32),
    "cached": Config(("--block-size", "32", "--stream-interval", "16"), 32),
    "batched": Config(arms.SERVER_ARGS, arms.CONCURRENCY),
}


def write_config(work: Path, name: str, url: str, size: arms.Size, concurrency: int) -> Path:
    """folio.toml for one configuration: its own database, so no job of another is resumed."""
    from tests.vllm_cpu.server import SERVED_MODEL_NAME

    database = work / f"{name}.db"
    config = pages.settings(f"sqlite:///{database}", {"base": url}, {"base": SERVED_MODEL_NAME})
    config["plans"] |= arms.plans("base", size.seed)
    config["profiles"][pages.PROFILE_ID]["request"]["max_tokens"] = size.max_tokens
    arms.in_flight(config, concurrency)
    (work / "folio.toml").write_text(pages.toml_text(config))
    return database


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds of one process (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def server_processes(pgid: int) -> dict[int, str]:
    """The server's processes by pid, named as vLLM names them (API server, engine, worker)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    found[int(entry.name)] = (entry / "comm").read_text().strip()
            except OSError:
                continue
    return found


def measure(work: Path, name: str, config: Config, size: arms.Size, plans: Sequence[str]
            ) -> dict[str, Any]:  # fmt: skip
    """One server start, the arms read through `folio eval`, the costs counted."""
    from tests.vllm_cpu.server import VllmServer, free_port

    port = free_port()
    database = write_config(work, name, f"http://127.0.0.1:{port}/v1", size, config.concurrency)
    began = time.monotonic()
    server = VllmServer(work / "models" / "base", port=port, log_path=work / f"vllm-{name}.log",
                        startup_timeout=arms.STARTUP_S,
                        extra_args=["--served-model-name", arms.served_name("base"),
                                    *config.server_args]).start()  # fmt: skip
    started = time.monotonic() - began
    try:
        processes = server_processes(os.getpgid(server.pid or os.getpid()))
        before = {pid: cpu_seconds(pid) for pid in processes}
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        tokens = server.generation_tokens_total()
        clock = time.monotonic()
        out = work / "eval" / name
        specs = [x for plan in plans for x in ("--arm", f"base.{plan}={plan}@base")]
        _folio(work, "eval", "pages/held_out", *specs, "--truth", "truth/held_out", "--out",
               str(out))  # fmt: skip
        wall = time.monotonic() - clock
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        generated = server.generation_tokens_total() - tokens
        cpu: dict[str, float] = {}
        for pid, process in processes.items():  # the API server and its helpers share a name
            key = f"vllm {process}"
            cpu[key] = round(cpu.get(key, 0.0) + cpu_seconds(pid) - before[pid], 1)
    finally:
        server.stop()
    cpu["folio eval"] = round(
        after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime, 1
    )
    evaluation = json.loads((out / "eval.json").read_text())
    rows = {arm["label"]: per_page(database, arm) for arm in evaluation["arms"]}
    page_arms = sum(len(arm["pages"]) for arm in rows.values())
    return {
        "server_args": list(config.server_args), "concurrency": config.concurrency,
        "server_start_s": round(started, 1), "wall_s": round(wall, 1), "page_arms": page_arms,
        "wall_s_per_page_arm": round(wall / page_arms, 3), "cpu_s": cpu,
        "cpu_s_per_page_arm": round(sum(cpu.values()) / page_arms, 3),
        "tokens": int(generated), "tokens_per_page_arm": round(generated / page_arms, 1),
        "cache_log": _last_cache_line(work / f"vllm-{name}.log"),
        "first_outputs": _first_outputs(database, rows),
    }  # fmt: skip


def _folio(work: Path, *args: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    env.pop("FOLIO_CONFIG", None)
    command = [sys.executable, "-c", "from app.cli.main import main; main()", *args]
    done = subprocess.run(command, cwd=work, env=env, capture_output=True, text=True)
    if done.returncode not in (0, 3):
        raise RuntimeError(f"folio {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")


def _first_outputs(database: Path, rows: dict[str, Any]) -> dict[str, dict[str, str]]:
    """Per arm and page, the first attempt's text (what must not change between servers)."""
    import sqlite3

    query = """SELECT d.name, a.output FROM attempts a JOIN pages p ON p.id = a.page_id
               JOIN documents d ON d.id = p.document_id WHERE a.job_id = ? ORDER BY a.id"""
    firsts: dict[str, dict[str, str]] = {}
    with sqlite3.connect(database) as connection:
        for label, arm in rows.items():
            seen: dict[str, str] = {}
            for name, output in connection.execute(query, (arm["job_id"],)):
                seen.setdefault(Path(name).stem, output or "")
            firsts[label] = seen
    return firsts


def _last_cache_line(log: Path) -> str:
    lines = [line for line in log.read_text(errors="replace").splitlines() if "hit rate" in line]
    return lines[-1].split("CPU KV cache usage", 1)[-1].strip() if lines else ""


def compare(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Each configuration against the first: speed-ups and first attempts unchanged."""
    names = list(results)
    first = results[names[0]]
    summary = {}
    for name in names:
        result = results[name]
        same = sum(result["first_outputs"][arm].get(page) == text
                   for arm, texts in first["first_outputs"].items()
                   for page, text in texts.items())  # fmt: skip
        summary[name] = {
            "wall_s_per_page_arm": result["wall_s_per_page_arm"],
            "cpu_s_per_page_arm": result["cpu_s_per_page_arm"],
            "wall_speedup": round(first["wall_s_per_page_arm"] / result["wall_s_per_page_arm"], 2),
            "cpu_speedup": round(first["cpu_s_per_page_arm"] / result["cpu_s_per_page_arm"], 2),
            "first_attempts_unchanged": f"{same} of {first['page_arms']}",
        }
    return summary


def floor_report() -> dict[str, Any]:
    """The committed base's compute floor a generated token in plain torch, one thread, beside
    the page-arm it implies: a page-arm generates 333 tokens on average (the arms bench's
    held-out pages, `flywheel_speed.json`) at an average context of about 430 tokens (a page's
    image and prompt, about 300, and half its text)."""
    from tests.vllm_cpu.server import default_venv

    tokens = 333
    rows = [floor.per_token_floor(batch=batch, context=context, dtype=dtype)
            for dtype in ("bfloat16", "float32") for batch in (64, 256)
            for context in (430, 580)]  # fmt: skip
    best = min((row for row in rows if row["context"] == 430),
               key=lambda row: row["floor_us_per_token"])  # fmt: skip
    report = {"rows": rows, "tokens_per_page_arm": tokens,
              "floor_s_per_page_arm": round(best["floor_us_per_token"] * tokens / 1e6, 4),
              "target_s_per_page_arm": 0.05,
              "machine": machine_info(default_venv(), ("torch",))}  # fmt: skip
    print(json.dumps(report["rows"], indent=1))
    print(f"floor a page-arm: {report['floor_s_per_page_arm']} s (target 0.05 s)")
    print(f"Results written to {write_results('flywheel_floor', report, None)}")
    return report


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m bench flywheel-speed", description=__doc__)
    parser.add_argument("--pages", type=int, default=48, help="held-out pages (families in turn)")
    parser.add_argument("--arms", nargs="+", choices=arms.BASE_ARMS, default=list(arms.BASE_ARMS))
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--out", type=Path, default=Path("/tmp/folio-flywheel-speed"))
    parser.add_argument(
        "--floor-only",
        action="store_true",
        help="only the model's compute floor a token (`floor.py`), no server",
    )
    args = parser.parse_args(argv)
    if args.floor_only:
        return floor_report()
    size = replace(arms.FULL, eval_pages=args.pages, train_pages=0)
    fresh_folder(args.out)
    hashes = arms.make_pages(args.out, size)
    assemble(COMMITTED, args.out / "models" / "base")
    results = {name: measure(args.out, name, CONFIGS[name], size, args.arms)
               for name in args.configs}  # fmt: skip
    summary = compare(results)
    for result in results.values():
        result.pop("first_outputs")
    from tests.vllm_cpu.server import default_venv

    report = {"pages": args.pages, "arms": args.arms, "data": hashes, "configs": results,
              "summary": summary, "machine": machine_info(default_venv(), ())}  # fmt: skip
    print(f"Machine: {describe(report['machine'])}")
    print(json.dumps(summary, indent=1))
    where = write_results("flywheel_speed", report, None)
    print(f"Results written to {where}")
    return report


if __name__ == "__main__":
    main()
