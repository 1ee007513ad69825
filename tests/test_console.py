"""The console over real HTTP (uvicorn on a free port), read as a browser reads it: signing in,
forms safe against cross-site posts, every page and its `.json` twin against the API's own
answers, and access exactly as the API's (another key's job is a 404 here too)."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from PIL import Image

from app.api.console.auth import COOKIE
from tests.api_server import Api, running_api, wait_for_job
from tests.test_api import pdf, settings_for


@pytest.fixture
def api(db_url: str, tmp_path: Path) -> Iterator[Api]:
    with running_api(settings_for(db_url, tmp_path)) as server:
        yield server


def browser(api: Api) -> httpx.Client:
    """A client that keeps cookies and follows no redirect by itself."""
    return httpx.Client(base_url=api.base_url, timeout=60)


def sign_in(api: Api, token: str) -> httpx.Client:
    client = browser(api)
    answer = client.post("/console/sign-in", data={"token": token, "next": "/console/jobs"})
    assert answer.status_code == 303 and answer.headers["location"] == "/console/jobs"
    return client


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', html)
    assert found, html[:500]
    return found.group(1)


def submit(client: httpx.Client, files: list[tuple[str, bytes]]) -> str:
    token = csrf_of(client.get("/console/submit").text)
    parts = [("files", (name, body, "application/pdf")) for name, body in files]
    answer = client.post("/console/submit", files=parts, data={"csrf": token})
    assert answer.status_code == 303, answer.text[-2000:]
    return answer.headers["location"].rsplit("/", 1)[1]


def test_nothing_but_the_sign_in_works_without_a_key(api: Api) -> None:
    client = browser(api)
    for path in ("/console/jobs", "/console/submit", "/console/jobs/abc"):
        answer = client.get(path)
        assert answer.status_code == 303 and answer.headers["location"].startswith(
            "/console/sign-in?next="
        )
    assert client.get("/console/jobs.json").status_code == 401
    assert client.get("/console/sign-in").status_code == 200
    assert client.get("/console").headers["location"] == "/console/jobs"
    assert client.get("/").headers["location"] == "/console/jobs"
    refused = client.post("/console/sign-in", data={"token": "not-a-key"})
    assert refused.status_code == 401 and "unknown or revoked" in refused.text
    assert COOKIE not in client.cookies


def test_the_key_is_kept_in_a_strict_http_only_cookie_and_sign_out_forgets_it(api: Api) -> None:
    client = browser(api)
    answer = client.post("/console/sign-in", data={"token": api.key("alice"), "next": "//evil"})
    assert answer.headers["location"] == "/console/jobs"  # never sent elsewhere
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/console" in cookie
    jobs = client.get("/console/jobs")
    assert jobs.status_code == 200 and "No jobs" in jobs.text
    assert client.post("/console/sign-out", data={}).status_code == 403  # no form token
    out = client.post("/console/sign-out", data={"csrf": csrf_of(jobs.text)})
    assert out.status_code == 303 and COOKIE not in client.cookies
    assert client.get("/console/jobs").status_code == 303


def test_forms_refuse_cross_site_posts(api: Api) -> None:
    client = sign_in(api, api.key("alice"))
    parts = [("files", ("a.pdf", pdf(1), "application/pdf"))]
    assert client.post("/console/submit", files=parts, data={}).status_code == 403
    token = csrf_of(client.get("/console/submit").text)
    evil = {"Origin": "https://evil.example"}
    answer = client.post("/console/submit", files=parts, data={"csrf": token}, headers=evil)
    assert answer.status_code == 403
    assert client.get("/v1/jobs", headers={}).status_code == 401  # the cookie is no API key
    login = browser(api).post("/console/sign-in", data={"token": "x"}, headers=evil)
    assert login.status_code == 403


def test_pages_and_their_json_twins_say_what_the_api_says(api: Api) -> None:
    token = api.key("alice")
    client = sign_in(api, token)
    job_id = submit(client, [("a.pdf", pdf(2)), ("b.pdf", pdf(1, seed=5))])
    own = api.client(token)
    wait_for_job(own, job_id)

    listed = client.get("/console/jobs.json").json()["jobs"]
    assert listed == own.get("/v1/jobs", params={"figures": True, "limit": 25}).json()
    [item] = listed["items"]
    assert item["figures"]["pages_done"] == item["figures"]["pages_total"] == 3
    html = client.get("/console/jobs").text
    assert job_id[:12] in html and "3 / 3" in html

    job = client.get(f"/console/jobs/{job_id}.json").json()
    assert job["job"] == own.get(f"/v1/jobs/{job_id}").json()
    assert job["documents"] == own.get(f"/v1/jobs/{job_id}/documents").json()
    assert job["pages"] == own.get(f"/v1/jobs/{job_id}/pages", params={"limit": 50}).json()
    assert job["report"] == own.get(f"/v1/jobs/{job_id}/report").json()
    page = client.get(f"/console/jobs/{job_id}").text
    assert ">a p2<" in page and ">b p1<" in page and 'id="chart-timeline"' in page

    page_id = job["pages"]["items"][0]["id"]
    detail = client.get(f"/console/jobs/{job_id}/pages/{page_id}.json").json()
    assert detail["page"] == own.get(f"/v1/jobs/{job_id}/pages/{page_id}").json()
    shown = client.get(f"/console/jobs/{job_id}/pages/{page_id}").text
    assert "Ended on" in shown and "textlayer" in shown

    image = client.get(f"/console/jobs/{job_id}/pages/{page_id}/image", params={"width": 300})
    assert image.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(image.content)).size[0] == 300  # the size shown, not the render
    assert client.get(f"/console/jobs/{job_id}/results").headers["content-type"] == (
        "application/zip"
    )
    report = client.get(f"/console/jobs/{job_id}/report.html")
    assert report.status_code == 200 and "attachment" in report.headers["content-disposition"]


def test_the_pages_table_sorts_by_a_figure(api: Api) -> None:
    token = api.key("alice")
    client = sign_in(api, token)
    job_id = submit(client, [("a.pdf", pdf(3))])
    wait_for_job(api.client(token), job_id)
    params = {"sort": "cost", "descending": "true"}
    by_cost = client.get(f"/console/jobs/{job_id}/pages.json", params=params).json()["pages"]
    costs = [p["figures"]["cost_usd"] for p in by_cost["items"]]
    assert costs == sorted(costs, reverse=True) and by_cost["sort"] == "cost"
    answer = api.client(token).get(f"/v1/jobs/{job_id}/pages", params={**params, "limit": 50})
    assert by_cost == answer.json()
    html = client.get(f"/console/jobs/{job_id}/pages", params={"sort": "attempts"}).text
    assert 'aria-sort="ascending"' in html and "a p3" in html
    assert (
        f'href="/console/jobs/{job_id}/pages?sort=cost'
        in client.get(f"/console/jobs/{job_id}").text
    )
    wrong = client.get(f"/console/jobs/{job_id}/pages", params={"sort": "colour"})
    assert wrong.status_code == 422 and "not a valid value: sort" in wrong.text


def test_another_keys_job_is_a_404_in_the_console_too(api: Api) -> None:
    alice, bob = api.key("alice"), api.key("bob")
    job_id = submit(sign_in(api, alice), [("a.pdf", pdf(1))])
    wait_for_job(api.client(alice), job_id)
    page_id = api.client(alice).get(f"/v1/jobs/{job_id}/pages").json()["items"][0]["id"]
    client = sign_in(api, bob)
    base = f"/console/jobs/{job_id}"
    for path in (
        base,
        f"{base}/pages",
        f"{base}/pages/{page_id}",
        f"{base}/pages/{page_id}/image",
        f"{base}/results",
        f"{base}/report.json",
        f"{base}/events",
    ):
        assert client.get(path).status_code == 404, path
    assert client.get(f"{base}.json").json()["status"] == 404
    refused = client.get(base)
    assert "404 Not Found" in refused.text and refused.headers["content-type"].startswith(
        "text/html"
    )
    token = csrf_of(client.get("/console/jobs").text)
    assert client.post(f"{base}/cancel", data={"csrf": token}).status_code == 404
    assert client.get("/console/jobs.json").json()["jobs"]["total"] == 0


def test_a_refused_submit_shows_the_form_with_the_apis_reason(api: Api) -> None:
    client = sign_in(api, api.key("alice"))
    token = csrf_of(client.get("/console/submit").text)
    parts = [("files", ("a.pdf", pdf(1), "application/pdf"))]
    answer = client.post("/console/submit", files=parts, data={"csrf": token, "engine": "nope"})
    assert answer.status_code == 422 and "unknown engine plan" in answer.text
    answer = client.post("/console/submit", data={"csrf": token})
    assert answer.status_code == 422 and "choose PDFs" in answer.text
