#!/usr/bin/env bash
# Provide `yaml2json` for the reader differential: the small Go program in
# tests/support/yaml2json, which reads YAML with sigs.k8s.io/yaml (the reader
# of kubectl, Helm and Argo CD), built once with its pinned go.mod/go.sum
# into ${CRD_SAFETY_GO_BIN_DIR:-<repo>/target/go-bin}/yaml2json-<hash>/bin.
#
# stdout: exactly one line, the directory holding `yaml2json`.
# exit 0: success; 3: Go missing or the module proxy unreachable (one line
# on stderr starting with "cannot build yaml2json: ", so tests skip, or fail
# with CI=true); 1: anything else.
set -euo pipefail
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
SRC="$REPO_ROOT/tests/support/yaml2json"
CACHE_ROOT="${CRD_SAFETY_GO_BIN_DIR:-$REPO_ROOT/target/go-bin}"
# The sources name the build: a changed program or pin builds anew.
HASH="$(cat "$SRC/main.go" "$SRC/go.mod" "$SRC/go.sum" | sha256sum | cut -c1-12)"
BIN="$CACHE_ROOT/yaml2json-$HASH/bin"
if [[ -x "$BIN/yaml2json" ]]; then printf '%s\n' "$BIN"; exit 0; fi

GO="${GO:-}"
if [[ -z "$GO" ]]; then
    GO="$(command -v go 2>/dev/null || true)"
    [[ -z "$GO" && -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go
fi
[[ -n "$GO" && -x "$GO" ]] || { echo "cannot build yaml2json: Go toolchain not found" >&2; exit 3; }
mkdir -p "$BIN"
LOG="$CACHE_ROOT/last-yaml2json.log"
if ! (cd "$SRC" && GOWORK=off CGO_ENABLED=0 "$GO" mod download) >"$LOG" 2>&1; then
    echo "cannot build yaml2json: cannot download its modules: $(tail -n 1 "$LOG")" >&2
    exit 3
fi
if ! (cd "$SRC" && GOWORK=off CGO_ENABLED=0 "$GO" build -trimpath -buildvcs=false \
        -o "$BIN/yaml2json.tmp" .) >"$LOG" 2>&1; then
    echo "yaml2json: go build failed: $(tail -n 1 "$LOG")" >&2
    exit 1
fi
mv -f "$BIN/yaml2json.tmp" "$BIN/yaml2json"
printf '%s\n' "$BIN"
