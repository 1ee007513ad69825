# redis:7, as docker-compose.yml names it, made here from Debian bookworm's Redis 7 (no image
# registry is reachable from CI). As the official image is built: protected mode off (other
# containers reach it without a password), /data the working folder.
ARG BASE
FROM ${BASE}
LABEL org.folio.ci-standin=redis
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends redis-server >/dev/null \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /data
ENTRYPOINT ["sh", "-c", "if [ \"$1\" = redis-server ]; then shift; exec redis-server --protected-mode no \"$@\"; fi; exec \"$@\"", "redis"]
CMD ["redis-server"]
