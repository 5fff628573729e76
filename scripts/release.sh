#!/usr/bin/env bash
# Build release archives and everything published with them, the way the
# release workflow does (.github/workflows/release.yml runs this per
# platform), so a release can be made and checked locally.
#
# usage: scripts/release.sh [--target TRIPLE]... [--out DIR] [--no-build]
#   --target   a Rust target triple; repeatable. Default: x86_64-unknown-linux-musl
#              (a static binary, what every Linux runs).
#   --out      where to write (default: target/dist).
#   --no-build package binaries already in target/TRIPLE/release; with no
#              --target, only write the files below over the archives in DIR
#              (what the release workflow does after collecting every platform's).
#
# Writes, for version X of Cargo.toml:
#   kubectl-crd_safety-vX-TRIPLE.tar.gz (.zip for Windows): the binary, the
#     completion helper kubectl_complete-crd_safety and the Helm plugin's
#     plugin.yaml, Helm 3's format (not on Windows), LICENSE, README.md;
#   helm-crd-safety-vX-TRIPLE.tgz (not for Windows): the same with Helm 4's plugin.yaml;
#   checksums.txt (sha256 of every archive in DIR);
#   crd-safety.yaml, the krew manifest, and crd-safety.rb, the Homebrew formula, with the
#     sha256 of the archives present (64 zeros for platforms not built here);
#   RELEASE_NOTES.md, CHANGELOG's section for X (or "Unreleased").
# Exit 3 when the Rust target cannot be installed here.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
cd "$root"
number="$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n1)"
version="v$number"
targets=()
out="$root/target/dist"
build=1
while [[ $# -gt 0 ]]; do
    case "$1" in
        --target) targets+=("$2"); shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --no-build) build=0; shift ;;
        *) echo "release: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ ${#targets[@]} -gt 0 || $build == 0 ]] || targets=(x86_64-unknown-linux-musl)
mkdir -p "$out"
out="$(cd "$out" && pwd -P)"

toolchain() { # target
    if command -v rustup >/dev/null && ! rustup target list --installed | grep -qx "$1"; then
        rustup target add "$1" >&2 || { echo "release: cannot add the Rust target $1" >&2; exit 3; }
    fi
    # ring's C code (the only C in the tree) needs no libc headers: the
    # host's C compiler builds it for musl when musl-gcc (Debian:
    # musl-tools) is absent, and Rust links musl's own start files.
    if [[ "$1" == x86_64-unknown-linux-musl ]] && ! command -v musl-gcc >/dev/null; then
        export CC_x86_64_unknown_linux_musl="${CC:-cc}"
    fi
}

for target in ${targets[@]+"${targets[@]}"}; do
    exe=kubectl-crd_safety
    [[ "$target" == *windows* ]] && exe=kubectl-crd_safety.exe
    if [[ $build == 1 ]]; then
        toolchain "$target"
        cargo build --release --locked --target "$target" >&2
    fi
    bin="target/$target/release/$exe"
    [[ -x "$bin" ]] || { echo "release: $bin not found" >&2; exit 1; }
    stage="$(mktemp -d)"
    chmod 755 "$stage"
    cp "$bin" "$stage/$exe"
    cp LICENSE README.md "$stage/"
    if [[ "$target" != *windows* ]]; then
        cp completion/kubectl_complete-crd_safety "$stage/"
        # The Helm plugin: `helm plugin install URL-OF-THIS-ARCHIVE`.
        sed -e "s/{{VERSION_NUMBER}}/$number/g" -e '/^# /d' \
            plugin-manifest/helm-plugin.yaml.tmpl > "$stage/plugin.yaml"
    fi
    name="kubectl-crd_safety-$version-$target"
    if [[ "$target" == *windows* ]]; then
        (cd "$stage" && rm -f "$out/$name.zip" && zip -q -X -r "$out/$name.zip" .)
    else
        # Same bytes for the same inputs: sorted names, no owners, fixed times.
        # The files by name, with no `./` entry: helm's plugin installer
        # refuses an archive whose first entry is the directory it extracts to.
        # shellcheck disable=SC2046
        tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
            -C "$stage" -cf - $(cd "$stage" && ls -A) | gzip -n > "$out/$name.tar.gz"
    fi
    if [[ "$target" != *windows* ]]; then
        # The Helm 4 plugin: the same files, with Helm 4's plugin.yaml, in a
        # .tgz (the suffix Helm 4 installs and verifies).
        sed -e "s/{{VERSION_NUMBER}}/$number/g" -e '/^# /d' \
            plugin-manifest/helm4-plugin.yaml.tmpl > "$stage/plugin.yaml"
        # shellcheck disable=SC2046
        tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
            -C "$stage" -cf - $(cd "$stage" && ls -A) | gzip -n > "$out/helm-crd-safety-$version-$target.tgz"
    fi
    rm -rf "$stage"
    echo "release: wrote $out/$name.*" >&2
done

(cd "$out" && sha256sum kubectl-crd_safety-*.tar.gz kubectl-crd_safety-*.zip helm-crd-safety-*.tgz 2>/dev/null > checksums.txt || true)
bash scripts/render-krew.sh "$out" "$out/crd-safety.yaml"

sum() { # target extension
    local f="$out/kubectl-crd_safety-$version-$1.$2"
    if [[ -f "$f" ]]; then sha256sum "$f" | cut -d' ' -f1; else printf '0%.0s' $(seq 1 64); fi
}
sed -e "s/{{VERSION}}/$version/g" -e "s/{{VERSION_NUMBER}}/$number/g" \
    -e "s/{{SHA256_LINUX_AMD64}}/$(sum x86_64-unknown-linux-musl tar.gz)/" \
    -e "s/{{SHA256_LINUX_ARM64}}/$(sum aarch64-unknown-linux-musl tar.gz)/" \
    -e "s/{{SHA256_DARWIN_AMD64}}/$(sum x86_64-apple-darwin tar.gz)/" \
    -e "s/{{SHA256_DARWIN_ARM64}}/$(sum aarch64-apple-darwin tar.gz)/" \
    -e '/^# /d' plugin-manifest/crd-safety.rb.tmpl > "$out/crd-safety.rb"

# CHANGELOG's section for this version, else the Unreleased one.
awk -v v="$number" '
    /^## / { if (found) exit; if ($2 == v || $2 == "[" v "]") found = 1; next }
    found { print }' CHANGELOG.md > "$out/RELEASE_NOTES.md"
if [[ ! -s "$out/RELEASE_NOTES.md" ]]; then
    awk '/^## / { if (found) exit; if ($2 == "Unreleased") found = 1; next } found { print }' \
        CHANGELOG.md > "$out/RELEASE_NOTES.md"
fi
echo "$out"
