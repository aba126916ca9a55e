#!/usr/bin/env bash
# The scale benchmark (benches/scale.rs) on this machine's Docker daemon and then on a Podman
# service started here as root (on a storage root of its own, aci's base image copied in from
# Docker), each at 1, 16 and 64 sessions unless SESSIONS says otherwise. Prints one table per
# engine; the tables are also written to $CARGO_TARGET_DIR/scale.md (default target/scale.md).
# Other arguments go to every run (`--commands 20 --idle 5`). Needs root for Podman, the base image (`aci images build`) and podman (tests/host-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
extra=("$@")

sessions=${SESSIONS:-1,16,64}
image=${ACI_TEST_IMAGE:-aci-base:bookworm}
target=${CARGO_TARGET_DIR:-target}
out="$target/scale.md"
mkdir -p "$target"

command -v podman >/dev/null || { echo "error: podman is not installed (tests/host-deps.sh installs it)" >&2; exit 1; }
docker image inspect "$image" >/dev/null 2>&1 || { echo "error: Docker has no $image: run aci images build" >&2; exit 1; }

cargo build --release --quiet --bench scale
bench() { cargo bench --quiet --bench scale -- --sessions "$sessions" --image "$image" "${extra[@]}" "$@"; }

: >"$out"
echo "== Docker" | tee -a "$out"
bench | tee -a "$out"
echo | tee -a "$out"
echo "== Docker, disk quota measured by the daemon" | tee -a "$out"
bench --measured | tee -a "$out"

storage=(--root /var/lib/aci-bench-podman/storage --runroot /run/aci-bench-podman)
socket=/tmp/aci-bench-podman-$$.sock
podman "${storage[@]}" system service --time=0 "unix://$socket" </dev/null >/dev/null 2>&1 &
service=$!
trap 'kill $service 2>/dev/null; wait $service 2>/dev/null; rm -f "$socket"' EXIT
for _ in $(seq 300); do
    [ -S "$socket" ] && podman "${storage[@]}" version >/dev/null 2>&1 && break
    sleep 0.1
done
[ -S "$socket" ] || { echo "error: podman's service did not start" >&2; exit 1; }
docker_id=$(docker image inspect -f '{{.Id}}' "$image")
podman_id=$(podman "${storage[@]}" image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
if [ "${docker_id#sha256:}" != "${podman_id#sha256:}" ]; then
    loaded=$(docker save "$image" | podman "${storage[@]}" load 2>&1) || {
        echo "$loaded" >&2
        echo "error: podman load of $image failed" >&2
        exit 1
    }
fi
echo | tee -a "$out"
echo "== Podman $(podman --version | awk '{print $3}') (as root, its Docker-compatible API)" | tee -a "$out"
DOCKER_HOST="unix://$socket" bench | tee -a "$out"
echo "written: $out"
