# The C and C++ task image: Debian's GCC (gcc, g++), Make and CMake, the GoogleTest and doctest
# headers and libraries, Tcl (redis's and valkey's test suites), plus git. Built by
# `aci images build` on top of the offline base image; with a registry, pass
# BASE=debian:bookworm (see README). No Clang: no test needs it, and with LLVM it is 43 more
# packages.
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends gcc g++ make cmake libc6-dev libgtest-dev doctest-dev pkg-config tcl git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=c
