#!/usr/bin/env bash
# Provide a real `helm` binary for the chart tests, built from the official Go
# module (helm.sh/helm/v3) through the Go module proxy, like envtest-assets.sh.
#
# stdout: exactly one line, the absolute path of a directory containing `helm`.
#         Everything else goes to stderr.
# exit 0: success
# exit 3: helm cannot be built in this environment (Go missing, module proxy
#         unreachable); one line on stderr starting with "cannot build helm: ".
#         Callers may skip the tests that need helm (not with CI=true).
# exit 1: anything else (e.g. a compile error) - a real failure.
#
# Environment:
#   CRD_SAFETY_HELM_DIR  cache root (default: <repo>/target/helm)
#   GO                   go binary to use (default: `go` on PATH, then /usr/local/go/bin/go)
#   GOMODCACHE, GOCACHE, GOPROXY, GOFLAGS, ...  honoured as usual
set -euo pipefail

# ---- pinned version -----------------------------------------------------------
HELM_VERSION="v3.21.4"   # helm.sh/helm/v3
# -----------------------------------------------------------------------------

log() { printf 'helm-bin: %s\n' "$*" >&2; }
cannot_build() { printf 'cannot build helm: %s\n' "$*" >&2; exit 3; }
fail() { printf 'helm-bin: error: %s\n' "$*" >&2; exit 1; }
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -n 1 | tr -d '\r' || true; }

helm_ok() { [[ -x "$1/helm" ]] && [[ "$("$1/helm" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CACHE_ROOT="${CRD_SAFETY_HELM_DIR:-$REPO_ROOT/target/helm}"
mkdir -p "$CACHE_ROOT" || fail "cannot create cache dir $CACHE_ROOT"
CACHE_ROOT="$(cd "$CACHE_ROOT" && pwd -P)"
BIN="$CACHE_ROOT/$HELM_VERSION/bin"

if helm_ok "$BIN"; then printf '%s\n' "$BIN"; exit 0; fi

GO="${GO:-}"
if [[ -z "$GO" ]]; then
    GO="$(command -v go 2>/dev/null || true)"
    [[ -z "$GO" && -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go
fi
[[ -n "$GO" && -x "$GO" ]] || cannot_build "Go toolchain not found (install Go >= 1.24)"
"$GO" version >/dev/null 2>&1 || cannot_build "'$GO version' failed"

export GO111MODULE=on GOWORK=off CGO_ENABLED=0
gocache="$("$GO" env GOCACHE 2>/dev/null || true)"
if [[ -z "$gocache" || "$gocache" == off ]]; then export GOCACHE="$CACHE_ROOT/go-build"; fi
if [[ -z "$("$GO" env GOMODCACHE 2>/dev/null || true)" ]]; then export GOMODCACHE="$CACHE_ROOT/go-mod"; fi

mkdir -p "$BIN"
# Serialise concurrent builders (parallel test binaries, several shells).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$CACHE_ROOT/.lock"
    if ! flock -n 9; then
        log "another build is running, waiting for $CACHE_ROOT/.lock"
        flock 9
    fi
    if helm_ok "$BIN"; then printf '%s\n' "$BIN"; exit 0; fi
fi

LOGF="$CACHE_ROOT/last-go.log"
start=$SECONDS
log "fetching helm.sh/helm/v3@$HELM_VERSION via $("$GO" env GOPROXY)"
# Outside any module, `go mod download` only needs the module path.
if ! (cd "$CACHE_ROOT" && "$GO" mod download "helm.sh/helm/v3@$HELM_VERSION") >"$LOGF" 2>&1; then
    cannot_build "cannot download helm.sh/helm/v3@$HELM_VERSION (GOPROXY=$("$GO" env GOPROXY)): $(last_line "$LOGF")"
fi
log "building helm $HELM_VERSION (a few minutes on first run)"
# `go install pkg@version` builds with helm's own go.mod and go.sum.
if ! (cd "$CACHE_ROOT" && GOBIN="$BIN.tmp" "$GO" install -trimpath -buildvcs=false \
        -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >"$LOGF" 2>&1; then
    fail "go install helm failed: $(last_line "$LOGF")"
fi
mv -f "$BIN.tmp/helm" "$BIN/helm"
rmdir "$BIN.tmp" 2>/dev/null || true
helm_ok "$BIN" || fail "built helm does not report $HELM_VERSION: $("$BIN/helm" version 2>&1 | head -n1)"
log "helm ready ($((SECONDS - start))s)"
printf '%s\n' "$BIN"
