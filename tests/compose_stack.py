"""The compose smoke test's Python side (.ci/compose_smoke.sh runs the containers): the compose
file it brings up, and the checks it makes through Folio's API.

`python -m tests.compose_stack variant OUT --port P` writes docker-compose.yml with vLLM
replaced by the stand-in (bench/vllm_standin) and nothing else changed but what a machine with
no GPU and no open ports needs: no GPU reservation (Compose v1 cannot drop one in an override
file), the API published on 127.0.0.1 only, and build contexts made absolute (the variant lives
outside the repository, beside a fresh data folder). `submit URL TOKEN PDF...` uploads PDFs
through the API with an API key's token; `check URL TOKEN JOB PAGES` waits for that key's job to
end and checks each of its pages."""

from __future__ import annotations

import copy
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

ROOT = Path(__file__).resolve().parents[1]
STANDIN_IMAGE = "folio-vllm-standin:ci"
ENDED = {"done", "cancelled", "undelivered"}
JOB_DEADLINE_S = 600  # a hung stack, not a slow one: the samples take seconds


def standin_service(vllm: dict[str, Any]) -> dict[str, Any]:
    """The stand-in in vLLM's place: the same model name and the same healthcheck."""
    command = list(vllm["command"])
    model = command[command.index("--model") + 1]
    return {
        "image": STANDIN_IMAGE,
        "restart": vllm["restart"],
        "command": ["--port", "8000", "--model", model],
        "healthcheck": vllm["healthcheck"],
    }


def variant(shipped: dict[str, Any], port: int, repo: Path = ROOT) -> dict[str, Any]:
    """The shipped compose file as the smoke test brings it up (the module's docstring)."""
    changed = {k: copy.deepcopy(v) for k, v in shipped.items() if not k.startswith("x-")}
    services = changed["services"]
    services["vllm"] = standin_service(services["vllm"])
    for service in services.values():
        reservations = service.get("deploy", {}).get("resources", {}).get("reservations", {})
        reservations.pop("devices", None)
        if "build" in service:
            service["build"] = str(repo)
        if "ports" in service:
            service["ports"] = [
                f"127.0.0.1:{port}:{str(p).rsplit(':', 1)[-1]}" for p in service["ports"]
            ]
    return changed


def submit(api: str, token: str, pdfs: list[Path]) -> str:
    """A job of these PDFs, uploaded as the API's multipart form; its id."""
    files = [("files", (pdf.name, pdf.read_bytes(), "application/pdf")) for pdf in pdfs]
    headers = {"Authorization": f"Bearer {token}"}
    response = httpx.post(f"{api}/v1/jobs", files=files, headers=headers, timeout=60)
    response.raise_for_status()
    return str(response.json()["id"])


def check(api: str, token: str, job_id: str, pages: int) -> list[str]:
    """Wait for the job to end; what is wrong with it or its pages (empty when all is well)."""
    deadline = time.monotonic() + JOB_DEADLINE_S
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=f"{api}/v1/jobs", headers=headers, timeout=30) as client:
        job = client.get(f"/{job_id}").raise_for_status().json()
        while job["status"] not in ENDED and time.monotonic() < deadline:
            time.sleep(1)
            job = client.get(f"/{job_id}").raise_for_status().json()
        found = [] if job["status"] == "done" else [f"job {job_id} is {job['status']}"]
        listed = client.get(f"/{job_id}/pages", params={"limit": 1000}).raise_for_status().json()
        if listed["total"] != pages:
            found.append(f"job {job_id}: {listed['total']} pages, {pages} expected")
        for page in listed["items"]:
            detail = client.get(f"/{job_id}/pages/{page['id']}").raise_for_status().json()
            where = f"job {job_id} document {page['document_id']} page {page['number']}"
            if (detail["status"], detail["outcome"]) != ("succeeded", "ok"):
                found.append(f"{where}: {detail['status']}, {detail['outcome']}")
            elif not (detail["text"] or "").strip():
                found.append(f"{where}: no text")
    return found


def page_count(pdfs: list[Path]) -> int:
    import pymupdf

    total = 0
    for pdf in pdfs:
        with pymupdf.open(pdf) as document:
            total += document.page_count
    return total


def main(argv: list[str]) -> int:
    command, args = argv[0], argv[1:]
    if command == "variant":
        shipped = yaml.safe_load((ROOT / "docker-compose.yml").read_text(encoding="utf-8"))
        port = int(args[args.index("--port") + 1])
        Path(args[0]).write_text(yaml.safe_dump(variant(shipped, port), sort_keys=False))
    elif command == "submit":
        print(submit(args[0], args[1], [Path(a) for a in args[2:]]))
    elif command == "pages":
        print(page_count([Path(a) for a in args]))
    elif command == "check":
        found = check(args[0], args[1], args[2], int(args[3]))
        print("\n".join(found) or f"job {args[2]}: all {args[3]} pages read")
        return 1 if found else 0
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
