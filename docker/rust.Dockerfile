# The Rust task image: Debian's cargo and rustc, plus git. Built by `aci images build` on top of
# the offline base image; with a registry, pass BASE=debian:bookworm (see README).
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive \
    CARGO_HOME=/opt/cargo \
    CARGO_NET_OFFLINE=true \
    CARGO_TERM_COLOR=never
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends cargo rustc git ca-certificates libc6-dev gcc >/dev/null \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=rust
