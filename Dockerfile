# One image for the api, the workers and the migrate step; the command picks the role.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/folio

# Dependencies first, at the versions the tests ran (deploy/docker/constraints.txt, checked
# against pyproject by tests/test_image_lock.py): a layer that a change to Folio's code alone
# does not rebuild. The s3 extra: workers and the API read documents from, and write results
# to, a bucket.
COPY pyproject.toml README.md deploy/docker/constraints.txt ./
RUN pip install -r constraints.txt
COPY alembic.ini ./
COPY app ./app
COPY workers ./workers
COPY migrations ./migrations
RUN pip install --no-deps -c constraints.txt ".[s3]" && pip check

# A fixed, numeric non-root user: Kubernetes' runAsNonRoot checks the image's user by number
# (deploy/k8s runs the pods as 10001).
RUN useradd --create-home --uid 10001 folio
COPY deploy/docker/entrypoint.sh /usr/local/bin/folio-entrypoint
USER 10001:10001
# Compose starts Folio's services as root for the entrypoint alone: it gives a data folder the
# Docker daemon made (as root) to folio, then runs `folio ...` as folio.
ENTRYPOINT ["folio-entrypoint", "folio"]
CMD ["--help"]
