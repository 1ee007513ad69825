# One image for the api, the workers and the migrate step; the command picks the role.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /opt/folio

COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY workers ./workers
COPY migrations ./migrations
RUN pip install .

RUN useradd --create-home folio
USER folio
ENTRYPOINT ["folio"]
CMD ["--help"]
