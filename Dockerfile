# One image for the api, the workers and the migrate step; the command picks the role.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/folio

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY workers ./workers
COPY migrations ./migrations
# The s3 extra: workers and the API read documents from, and write results to, a bucket.
RUN pip install ".[s3]"

RUN useradd --create-home --uid 1000 folio
COPY deploy/docker/entrypoint.sh /usr/local/bin/folio-entrypoint
USER folio
# Compose starts Folio's services as root for the entrypoint alone: it gives a data folder the
# Docker daemon made (as root) to folio, then runs `folio ...` as folio (uid 1000).
ENTRYPOINT ["folio-entrypoint", "folio"]
CMD ["--help"]
