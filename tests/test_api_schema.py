"""Schemathesis fuzzes every operation of the OpenAPI schema over HTTP: no answer is a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from app.settings import Settings
from tests.api_server import Api, running_api


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    tmp = tmp_path_factory.mktemp("schema")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FOLIO_CONFIG", str(tmp / "absent.toml"))
        config = Settings(
            database_url=f"sqlite:///{tmp / 'folio.db'}",
            engine="textlayer",
            concurrency=1,
            upload_dir=tmp / "uploads",
            api_allowed_roots=[tmp / "allowed"],
        )
    with running_api(config) as server:
        yield server


@pytest.fixture(scope="module")
def token(api: Api) -> str:
    return api.key("fuzzer")


def test_no_operation_answers_5xx(api: Api, token: str) -> None:
    loaded = schemathesis.openapi.from_url(f"{api.base_url}/openapi.json")
    headers = {"Authorization": f"Bearer {token}"}
    operations = [result.ok() for result in loaded.get_all_operations()]
    assert len(operations) >= 10
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=6,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: schemathesis.Case) -> None:
            response = case.call(base_url=api.base_url, headers=headers)
            case.validate_response(response, checks=[not_a_server_error])

        fuzz()


def test_openapi_documents_both_upload_forms(api: Api) -> None:
    spec = api.client(None).get("/openapi.json").json()
    body = spec["paths"]["/v1/jobs"]["post"]["requestBody"]["content"]
    assert set(body) == {"multipart/form-data", "application/json"}
    assert Path(api.settings.upload_dir).name == "uploads"
