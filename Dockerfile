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

# A fixed, numeric non-root user: Kubernetes' runAsNonRoot checks the image's user by number
# (deploy/k8s runs the pods as 10001).
RUN useradd --create-home --uid 10001 folio
USER 10001:10001
ENTRYPOINT ["folio"]
CMD ["--help"]
