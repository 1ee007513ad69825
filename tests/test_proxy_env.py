"""The stream reader takes the proxy httpx takes (the control client's), and goes through it.

The choice is checked against httpx's own over a table of environments; the path through a
real forward proxy (a process of its own, tests/http_proxies.py) for plain HTTP, its bypass
by NO_PROXY, and a CONNECT tunnel with TLS to a local HTTPS server.
"""

from __future__ import annotations

import asyncio
import datetime
import ssl
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from app.engines.proxy_env import proxy_for
from app.engines.sse_http import post_sse
from app.errors import EngineError
from tests.http_proxies import ProxyProcess

PROXY_VARIABLES = (
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "REQUEST_METHOD",
)
ENVIRONMENTS = [
    {},
    {"HTTP_PROXY": "http://p:3128"},
    {"http_proxy": "p2:8080", "HTTP_PROXY": "http://p:3128"},  # lower case wins, no scheme
    {"HTTPS_PROXY": "http://p:3128"},
    {"ALL_PROXY": "http://p:3128"},
    {"ALL_PROXY": "http://p:3128", "HTTP_PROXY": "http://h:1"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "127.0.0.1,localhost"},
    {"HTTP_PROXY": "http://p:3128", "no_proxy": "example.com"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": ".example.com"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "*"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "::1, vllm"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "http://vllm:8000"},
    {"HTTP_PROXY": "http://p:3128", "NO_PROXY": "vllm:9000"},
    {"HTTP_PROXY": "http://p:3128", "REQUEST_METHOD": "GET"},  # CGI: HTTP_PROXY ignored
]
URLS = [
    "http://127.0.0.1:8000/v1/chat/completions",
    "http://localhost:8000/v1",
    "http://[::1]:8000/v1",
    "http://vllm:8000/v1",
    "http://vllm:9000/v1",
    "https://vllm/v1",
    "http://example.com/v1",
    "http://www.example.com/v1",
    "http://wwwexample.com/v1",
    "https://api.example.com:443/v1",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def httpx_choice(url: str) -> str | None:
    """The proxy httpx's client uses for `url` (None: direct), from its own mounts."""
    client = httpx.Client()
    try:
        for pattern, transport in client._mounts.items():
            if pattern.matches(httpx.URL(url)):
                if transport is None:
                    return None
                proxy = transport._pool._proxy_url  # type: ignore[attr-defined]
                return f"{proxy.scheme.decode()}://{proxy.host.decode()}:{proxy.port}"
        return None
    finally:
        client.close()


def normalised(proxy: str | None) -> str | None:
    if proxy is None:
        return None
    url = httpx.URL(proxy)
    return f"{url.scheme}://{url.host}:{url.port or 80}"


@pytest.mark.parametrize("environment", ENVIRONMENTS, ids=str)
def test_the_stream_reader_chooses_the_proxy_httpx_chooses(
    clean_env: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    for name, value in environment.items():
        clean_env.setenv(name, value)
    for url in URLS:
        assert normalised(proxy_for(url)) == httpx_choice(url), (environment, url)


async def _serve_once(handler_reply: bytes, tls: ssl.SSLContext | None = None) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(handler_reply)
        await writer.drain()
        writer.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0, ssl=tls)


REPLY = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 22\r\n\r\n"
    b'data: {"ok": true}\n\n\n\n'
)


async def _read(url: str) -> str:
    response = await post_sse(url, {"stream": True}, {}, 10, 10)
    try:
        return "".join([piece async for piece in response.texts(10)])
    finally:
        await response.close()


async def _through(url_of: str, tls: ssl.SSLContext | None = None) -> str:
    server = await _serve_once(REPLY, tls)
    port = server.sockets[0].getsockname()[1]
    async with server:
        return await _read(url_of.format(port=port))


@pytest.fixture
def forward_proxy(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    log = tmp_path / "proxy.log"
    with ProxyProcess("forward", tmp_path, log=log) as proxy:
        yield proxy.url, log


def test_plain_http_goes_through_the_proxy_unless_no_proxy_names_the_host(
    clean_env: pytest.MonkeyPatch, forward_proxy: tuple[str, Path]
) -> None:
    proxy, log = forward_proxy
    clean_env.setenv("http_proxy", proxy)  # lower case, as many deployments set it

    text = asyncio.run(_through("http://127.0.0.1:{port}/v1/chat/completions"))
    assert '"ok": true' in text
    carried = log.read_text().splitlines()
    assert len(carried) == 1 and carried[0].startswith("POST http://127.0.0.1:")

    clean_env.setenv("NO_PROXY", "127.0.0.1")
    assert '"ok": true' in asyncio.run(_through("http://127.0.0.1:{port}/v1/chat/completions"))
    assert len(log.read_text().splitlines()) == 1  # straight to the server this time


def _self_signed(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_file, key_file)
    return context, cert_file


def test_https_goes_through_a_connect_tunnel(
    clean_env: pytest.MonkeyPatch, forward_proxy: tuple[str, Path], tmp_path: Path
) -> None:
    proxy, log = forward_proxy
    tls, cert_file = _self_signed(tmp_path)
    clean_env.setenv("HTTPS_PROXY", proxy)
    clean_env.setenv("SSL_CERT_FILE", str(cert_file))  # the client trusts the test server

    text = asyncio.run(_through("https://localhost:{port}/v1/chat/completions", tls))

    assert '"ok": true' in text
    carried = log.read_text().splitlines()
    assert len(carried) == 1 and carried[0].startswith("CONNECT localhost:")


def test_a_socks_proxy_is_refused_in_words(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("ALL_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(EngineError, match="socks5"):
        asyncio.run(_read("http://127.0.0.1:9/v1/chat/completions"))
