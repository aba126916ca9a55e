# The Python task image: python3, pip and venv from Debian, git, and pytest and flake8 from PyPI
# in a virtual environment that comes first on PATH (so `pip install` in a task's setup works
# without touching the system Python). Built by `aci images build` on top of the offline base
# image; with a registry, pass BASE=debian:bookworm (see README).
ARG BASE=aci-base:bookworm
FROM ${BASE}
ARG PYTEST_VERSION=8.3.5
ARG FLAKE8_VERSION=7.1.2
# The host's CA bundle, sent in the build context: pip reaches the package index only with it.
COPY ca-certificates.crt /etc/ssl/certs/aci-host-ca.crt
ENV PIP_CERT=/etc/ssl/certs/aci-host-ca.crt \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 python3-pip python3-venv git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
RUN python3 -m venv /opt/venv \
 && /opt/venv/bin/pip install -q "pytest==${PYTEST_VERSION}" "flake8==${FLAKE8_VERSION}"
ENV PATH=/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL aci.image=python
