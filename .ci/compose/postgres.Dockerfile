# postgres:16, as docker-compose.yml names it, made here from Debian bookworm's PostgreSQL 15
# (no image registry is reachable from CI): the official image's environment (POSTGRES_USER,
# POSTGRES_PASSWORD, POSTGRES_DB), data folder and `pg_isready` healthcheck.
ARG BASE
FROM ${BASE}
LABEL org.folio.ci-standin=postgres
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint
ENTRYPOINT ["postgres-entrypoint"]
CMD ["postgres"]
