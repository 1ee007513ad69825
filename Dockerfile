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

RUN useradd --create-home folio
USER folio
ENTRYPOINT ["folio"]
CMD ["--help"]
