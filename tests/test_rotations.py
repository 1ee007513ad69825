"""A webhook's signing secret can be rotated, and an API key's token too, without losing
anything (issue 62): the old secret signs beside the new one for a grace period, and a key's
new token reaches the very jobs its old one made. The API over real HTTP, on SQLite and
PostgreSQL; the token rotated with `folio apikey rotate`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.webhooks.signing import HEADER, BadSignature, sign, verify
from tests.api_server import running_api
from tests.test_api import assert_problem, settings_for, submit
from tests.test_webhooks import FAST, all_delivered, pdf, wait_until
from tests.webhook_receiver import running_receiver


def test_a_header_signed_with_two_secrets_verifies_with_either() -> None:
    body = b'{"type":"job.finished"}'
    header = sign(["whsec_new", "whsec_old"], body, timestamp=1_800_000_000)
    assert header.count("v1=") == 2
    for secret in ("whsec_new", "whsec_old"):
        assert verify(secret, header, body, now=1_800_000_010) == 1_800_000_000
    with pytest.raises(BadSignature, match="does not match"):
        verify("whsec_other", header, body, now=1_800_000_010)


@pytest.mark.parametrize("grace_h", [24.0, 0.0])
def test_a_rotated_secret_signs_beside_the_old_one_for_its_grace(
    db_url: str, tmp_path: Path, grace_h: float
) -> None:
    settings = settings_for(db_url, tmp_path, webhooks=FAST | {"rotation_grace_h": grace_h})
    with running_receiver() as receiver, running_api(settings) as api:
        client = api.client(api.key("alice"))
        old = client.get("/v1/webhook").json()["secret"]
        rotated = client.post("/v1/webhook/secret")
        assert rotated.status_code == 200, rotated.text
        new = rotated.json()["secret"]
        assert new != old and client.get("/v1/webhook").json()["secret"] == new
        job_id = submit(client, [("a.pdf", pdf(1))], callback_url=receiver.url).json()["id"]  # type: ignore[attr-defined]
        wait_until(all_delivered(client, job_id, 1))
    [request] = receiver.received
    assert json.loads(request.body)["data"]["job"]["id"] == job_id
    verify(new, request.headers[HEADER], request.body)
    if grace_h:  # a receiver still on the old secret loses nothing during the grace
        verify(old, request.headers[HEADER], request.body)
    else:
        with pytest.raises(BadSignature):
            verify(old, request.headers[HEADER], request.body)


def test_a_rotated_token_reaches_the_same_jobs(db_url: str, tmp_path: Path) -> None:
    settings = settings_for(db_url, tmp_path)
    env = {"FOLIO_DATABASE_URL": db_url}
    runner = CliRunner()
    with running_api(settings) as api:
        first = api.key("alice")
        job_id = submit(api.client(first), [("a.pdf", pdf(1))]).json()["id"]  # type: ignore[attr-defined]

        graced = runner.invoke(app, ["apikey", "rotate", "alice"], env=env)
        assert graced.exit_code == 0, graced.output
        second = graced.output.strip().splitlines()[-1]
        for token in (first, second):  # both work while the clients move over
            assert api.client(token).get(f"/v1/jobs/{job_id}").status_code == 200

        now = runner.invoke(app, ["apikey", "rotate", "alice", "--grace-h", "0"], env=env)
        assert now.exit_code == 0, now.output
        third = now.output.strip().splitlines()[-1]
        assert api.client(third).get(f"/v1/jobs/{job_id}").json()["id"] == job_id
        assert [j["id"] for j in api.client(third).get("/v1/jobs").json()["items"]] == [job_id]
        for gone in (first, second):
            assert_problem(api.client(gone).get(f"/v1/jobs/{job_id}"), 401)
        bob = api.client(api.key("bob"))  # another key still sees none of it
        assert_problem(bob.get(f"/v1/jobs/{job_id}"), 404)
