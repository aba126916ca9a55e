# The Go task image: Debian's Go toolchain (golang-go), plus git. Built by `aci images build` on
# top of the offline base image; with a registry, pass BASE=debian:bookworm (see README). No
# module proxy is reachable from a task, so `go` runs offline against the module cache, and cgo
# is off (no C compiler: the tests of a pure-Go package need none).
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive \
    GOPATH=/opt/go \
    GOPROXY=off \
    GOTOOLCHAIN=local \
    CGO_ENABLED=0 \
    GOCACHE=/tmp/go-cache
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends golang-go git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
ENV PATH=/usr/lib/go/bin:/opt/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
LABEL aci.image=go
