# The PHP task image: Debian's PHP 8.2 command line with the extensions PHPUnit needs, PHPUnit 9
# and Composer, plus git. Built by `aci images build` on top of the offline base image; with a
# registry, pass BASE=debian:bookworm (see README).
ARG BASE=aci-base:bookworm
FROM ${BASE}
ENV DEBIAN_FRONTEND=noninteractive \
    COMPOSER_ALLOW_SUPERUSER=1 \
    COMPOSER_DISABLE_NETWORK=1
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends php-cli php-xml php-mbstring phpunit composer git ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
LABEL aci.image=php
