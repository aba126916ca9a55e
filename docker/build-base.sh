#!/usr/bin/env bash
# Builds the aci base image from Debian packages, with no registry: debootstrap a minimal
# bookworm root file system, then `docker import` it. Language images (docker/*.Dockerfile)
# are built on top of this one by `aci images build`.
#
# usage: docker/build-base.sh [TAG]        (default tag: aci-base:bookworm); as root. On a
#        Debian or Ubuntu host without debootstrap, it installs it with apt-get first.
#        docker/build-base.sh --tools-only   installs what the recipe needs on the host
#        (debootstrap) and builds nothing.
# env:   ACI_DEBIAN_MIRROR (default http://deb.debian.org/debian), ACI_SUITE (default bookworm)
set -euo pipefail

tools_only=
if [ "${1:-}" = --tools-only ]; then tools_only=1; shift; fi
tag="${1:-aci-base:bookworm}"
suite="${ACI_SUITE:-bookworm}"
mirror="${ACI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Tools every task needs: the shell and file utilities the ACI drives, git for the baseline
# and the submission, patch for the evaluation's fallback apply, procps to find hung commands.
packages="ca-certificates,git,patch,procps,less,file,xz-utils"

[ "$(id -u)" = 0 ] || {
    echo "error: building $tag needs root (debootstrap makes a root file system)" >&2
    echo "hint: run it as root, e.g. sudo target/release/aci images build" >&2
    exit 1
}
# On a fresh Debian or Ubuntu host, install debootstrap (once). Its stdin is /dev/null: this
# script may itself be read from stdin (bash -s), which apt must not consume.
if ! command -v debootstrap >/dev/null; then
    if command -v apt-get >/dev/null; then
        echo "[base] debootstrap is not installed: installing it with apt-get (once, for $tag)"
        apt_log="$(mktemp /tmp/aci-apt.XXXXXX)"
        export DEBIAN_FRONTEND=noninteractive
        if { apt-get update -q && apt-get install -y -q debootstrap; } </dev/null >"$apt_log" 2>&1; then
            rm -f "$apt_log"
        else
            tail -n 20 "$apt_log" >&2
            echo "error: apt-get could not install debootstrap (full log in $apt_log)" >&2
            echo "hint: install it yourself (apt-get install -y debootstrap), then run this again" >&2
            exit 1
        fi
    else
        echo "error: debootstrap is not installed, and there is no apt-get to install it" >&2
        echo "hint: install debootstrap with the system's package manager, then run this again" >&2
        exit 1
    fi
fi

[ -n "$tools_only" ] && exit 0
command -v docker >/dev/null || { echo "error: the docker CLI is not installed" >&2; exit 1; }

root="$(mktemp -d /tmp/aci-rootfs.XXXXXX)"
trap 'rm -rf "$root"' EXIT

echo "[base] debootstrap $suite (minbase) from $mirror"
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" >"$root.log" 2>&1 || {
    tail -n 30 "$root.log" >&2
    echo "error: debootstrap failed; full log in $root.log" >&2
    exit 1
}
rm -f "$root.log"

# Keep the image small and the apt lists current for the language images built on top.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
printf 'deb %s %s main\ndeb %s %s-updates main\n' "$mirror" "$suite" "$mirror" "$suite" >"$root/etc/apt/sources.list"

echo "[base] docker import -> $tag"
tar -C "$root" --numeric-owner -c . | docker import \
    --change 'LABEL aci.image=base' \
    --change "LABEL aci.suite=$suite" \
    --change 'ENV LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["/bin/bash"]' \
    - "$tag" >/dev/null
echo "[base] done: $(docker image inspect --format '{{.Id}}' "$tag")"
