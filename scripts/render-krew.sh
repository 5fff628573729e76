#!/usr/bin/env bash
# Renders plugin-manifest/crd-safety.yaml.tmpl into krew/crd-safety.yaml.
#
# Usage: scripts/render-krew.sh [DIST_DIR [OUT]]
#   The version comes from Cargo.toml. With DIST_DIR, the sha256 of each
#   release archive found there is filled in; without it (between releases)
#   every sha256 is 64 zeros, which the release job replaces. OUT defaults to
#   krew/crd-safety.yaml (scripts/release.sh writes DIST_DIR/crd-safety.yaml).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version="v$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)"
dist="${1:-}"
out="${2:-$root/krew/crd-safety.yaml}"
zeros=$(printf '0%.0s' $(seq 1 64))

sum() { # target extension
  local f="$dist/kubectl-crd_safety-$version-$1.$2"
  if [[ -n "$dist" && -f "$f" ]]; then sha256sum "$f" | cut -d' ' -f1; else echo "$zeros"; fi
}

sed -e "s/{{VERSION}}/$version/g" \
    -e "s/{{SHA256_LINUX_AMD64}}/$(sum x86_64-unknown-linux-musl tar.gz)/" \
    -e "s/{{SHA256_LINUX_ARM64}}/$(sum aarch64-unknown-linux-musl tar.gz)/" \
    -e "s/{{SHA256_DARWIN_AMD64}}/$(sum x86_64-apple-darwin tar.gz)/" \
    -e "s/{{SHA256_DARWIN_ARM64}}/$(sum aarch64-apple-darwin tar.gz)/" \
    -e "s/{{SHA256_WINDOWS_AMD64}}/$(sum x86_64-pc-windows-msvc zip)/" \
    -e '/^# /d' \
    "$root/plugin-manifest/crd-safety.yaml.tmpl" \
  | { echo "# Rendered by scripts/render-krew.sh from plugin-manifest/crd-safety.yaml.tmpl; do not edit."; cat; } \
  > "$out"
echo "wrote $out for $version" >&2
