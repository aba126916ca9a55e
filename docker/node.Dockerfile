# The Node.js task image: Debian's Node.js 18 and TypeScript's compiler (tsc, from
# node-typescript), plus git. Built by `aci images build` on top of the offline base image; with
# a registry, pass BASE=debian:bookworm (see README). No package registry is reachable from a
# task, so there is no npm (with it Debian installs 376 packages instead of 11): tests
# run with Node's own runner (`node --test --test-reporter=tap`) or what a repository brings in
# node_modules.
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive \
    NODE_PATH=/usr/share/nodejs:/usr/lib/nodejs
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends nodejs node-typescript git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=node
