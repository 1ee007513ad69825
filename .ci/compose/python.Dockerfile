# python:3.11-slim, as Folio's Dockerfile names it, made here from Debian bookworm's Python 3.11
# (no image registry is reachable from CI). As in the official image: `python` and `pip` on
# PATH, and pip free to install into the system Python. The build context is a folder the
# smoke test makes, with the host's CA bundle in it: behind a TLS-inspecting proxy (as CI's
# egress is) pip must trust the proxy's CA, and no certificate is ever committed.
ARG BASE
FROM ${BASE}
LABEL org.folio.ci-standin=python
RUN rm -f /usr/lib/python3.11/EXTERNALLY-MANAGED
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
