#!/usr/bin/env bash
# Build the crd-safety container image: the static (musl) binary alone,
# `FROM scratch`, non-root (see Dockerfile).
#
# usage: scripts/build-image.sh [TAG]     (default ghcr.io/crd-safety/crd-safety:<version>)
#
# The binary is built by scripts/release.sh (which adds the musl target when
# missing); the image needs one of docker, podman or buildah. Nothing is pulled: the base is `scratch`. Without a daemon,
# buildah works as root with `--storage-driver vfs --isolation chroot`,
# which this script uses when buildah is the only builder.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
version="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
tag="${1:-ghcr.io/crd-safety/crd-safety:${version}}"
target=x86_64-unknown-linux-musl

bash scripts/release.sh --target "$target" --out target/dist >/dev/null
bin="target/$target/release/kubectl-crd_safety"
# A static binary: no dynamic loader in the image to run anything else.
if file "$bin" | grep -q "dynamically linked"; then
    echo "build-image: $bin is not static" >&2
    exit 1
fi

mkdir -p target/image/amd64
cp "$bin" target/image/amd64/kubectl-crd_safety

if command -v docker >/dev/null && docker info >/dev/null 2>&1; then
    docker build -t "$tag" .
elif command -v podman >/dev/null; then
    podman build -t "$tag" .
elif command -v buildah >/dev/null; then
    buildah --storage-driver vfs bud --isolation chroot -t "$tag" .
else
    echo "build-image: no docker daemon, podman or buildah to build with" >&2
    exit 3
fi
echo "$tag"
