#!/usr/bin/env bash
# Builds the aci base image from Debian packages, with no registry: debootstrap a minimal
# bookworm root file system, then `docker import` it. Language images (docker/*.Dockerfile)
# are built on top of this one by `aci images build`.
#
# usage: docker/build-base.sh [TAG]        (default tag: aci-base:bookworm)
# env:   ACI_DEBIAN_MIRROR (default http://deb.debian.org/debian), ACI_SUITE (default bookworm)
set -euo pipefail

tag="${1:-aci-base:bookworm}"
suite="${ACI_SUITE:-bookworm}"
mirror="${ACI_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Tools every task needs: the shell and file utilities the ACI drives, git for the baseline
# and the submission, patch for the evaluation's fallback apply, procps to find hung commands.
packages="ca-certificates,git,patch,procps,less,file,xz-utils"

command -v debootstrap >/dev/null || { echo "error: debootstrap is not installed" >&2; echo "hint: apt-get install -y debootstrap" >&2; exit 1; }
command -v docker >/dev/null || { echo "error: the docker CLI is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "error: debootstrap needs root" >&2; exit 1; }

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
