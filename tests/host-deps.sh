#!/usr/bin/env bash
# Installs, with apt-get, what the test suite drives on the host and is missing: debootstrap
# (the base image), git, the CA bundle (pip in image builds), python3 (local-runtime tests) and
# its venv module (mini-swe-agent side by side with aci),
# chromium and chromium-driver (aci inspect in a real browser), docker-registry (a real
# registry on loopback for pulls and pushes), openssl (the Kubernetes stand-in's HTTPS), podman
# with catatonit (its init process) and fuse-overlayfs (Podman's engine tests), and
# openssh-server with its client (a daemon reached through DOCKER_HOST=ssh://).
# Does nothing when all are there; fails loudly, naming what is missing, when it cannot.
set -euo pipefail

need=()
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v git >/dev/null || need+=(git)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
command -v python3 >/dev/null || need+=(python3)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
[ -x /usr/bin/docker-registry ] || need+=(docker-registry)
command -v openssl >/dev/null || need+=(openssl)
command -v podman >/dev/null || need+=(podman)
[ -x /usr/bin/catatonit ] || [ -x /usr/libexec/podman/catatonit ] || need+=(catatonit)
command -v fuse-overlayfs >/dev/null || need+=(fuse-overlayfs)
[ -x /usr/bin/ssh ] && [ -x /usr/bin/ssh-keygen ] || need+=(openssh-client)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
if [ ${#need[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || {
        echo "error: the tests need ${need[*]}, and there is no apt-get to install them" >&2
        exit 1
    }
    [ "$(id -u)" = 0 ] || {
        echo "error: the tests need ${need[*]}; installing them needs root" >&2
        echo "hint: run this as root, or install them yourself" >&2
        exit 1
    }
    echo "installing: ${need[*]}"
    apt-get update -qq </dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" </dev/null >/dev/null
fi
for tool in debootstrap git python3 chromium chromedriver docker-registry openssl podman fuse-overlayfs ssh ssh-keygen sshd; do
    command -v "$tool" >/dev/null || [ -x "/usr/sbin/$tool" ] || [ -x "/usr/bin/$tool" ] || {
        echo "error: $tool is not installed and could not be; the tests need it" >&2
        exit 1
    }
done
