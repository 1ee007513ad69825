"""A real S3 API server process for the storage tests: moto's server mode (`python -m
moto.server`), with IAM enforced so that a denied key is a real 403.

moto implements S3's wire protocol (REST + XML, SigV4, ETags, If-Match, pagination, pre-signed
URLs) in memory; it is not S3: no durability, no consistency model, no throughput to speak
of, and its IAM is a subset. Enforcing IAM: the first `_SETUP_CALLS` requests run without
authentication (they create the users); every request after them must be signed by a user
whose policy allows it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

_SETUP_CALLS = 6  # create_user, put_user_policy, create_access_key, for each of two users
REGION = "us-east-1"
DENIED_PREFIX = "denied/"  # the reader may list it, never read it


@dataclass(frozen=True)
class Credentials:
    key_id: str
    secret: str

    def env(self, endpoint: str) -> dict[str, str]:
        """The AWS configuration chain's variables a worker process reads (no FOLIO_ secret)."""
        return {
            "AWS_ACCESS_KEY_ID": self.key_id,
            "AWS_SECRET_ACCESS_KEY": self.secret,
            "AWS_DEFAULT_REGION": REGION,
            "AWS_ENDPOINT_URL": endpoint,
        }


class S3Server:
    """`python -m moto.server -p PORT` as a subprocess; `admin` may do anything, `reader` (what
    Folio runs as) everything but read objects under `denied/`. Without `enforce_iam` anyone
    may do anything (moto answers pre-signed URLs only so: with IAM on, a pre-signed PUT gets
    a 500 from moto 5.2)."""

    def __init__(self, log: Path, enforce_iam: bool = True) -> None:
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        env = dict(os.environ)
        if enforce_iam:
            env["INITIAL_NO_AUTH_ACTION_COUNT"] = str(_SETUP_CALLS)
        command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)]
        self.process = subprocess.Popen(
            command, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT
        )
        _wait_for_port(self.port, self.process)
        self.admin, self.reader = self._users()

    def _users(self) -> tuple[Credentials, Credentials]:
        import boto3

        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="setup",
            aws_secret_access_key="setup",
        )
        allow_all = {"Effect": "Allow", "Action": "*", "Resource": "*"}
        deny = {
            "Effect": "Deny",
            "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::*/{DENIED_PREFIX}*",
        }
        made = []
        for user, statements in (("admin", [allow_all]), ("reader", [allow_all, deny])):
            iam.create_user(UserName=user)
            policy = json.dumps({"Version": "2012-10-17", "Statement": statements})
            iam.put_user_policy(UserName=user, PolicyName="folio-test", PolicyDocument=policy)
            key = iam.create_access_key(UserName=user)["AccessKey"]
            made.append(Credentials(key["AccessKeyId"], key["SecretAccessKey"]))
        return made[0], made[1]

    def client(self, who: Credentials | None = None, endpoint: str | None = None) -> object:
        import boto3

        who = who or self.admin
        return boto3.client(
            "s3",
            endpoint_url=endpoint or self.endpoint,
            region_name=REGION,
            aws_access_key_id=who.key_id,
            aws_secret_access_key=who.secret,
        )

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


def _wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(300):  # a bound on tries, not a timing assertion
        if process.poll() is not None:
            raise RuntimeError(f"moto server exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("moto server did not start listening")
