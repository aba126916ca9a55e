# The Ruby task image: Debian's Ruby 3.1 with Bundler, RSpec, minitest and test-unit, plus git.
# Built by `aci images build` on top of the offline base image; with a registry, pass
# BASE=debian:bookworm (see README).
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends ruby bundler ruby-rspec ruby-minitest ruby-test-unit rake git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=ruby
