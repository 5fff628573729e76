#!/usr/bin/env bash
# Provide a Go tool the tests need (helm, krew, ...), built once from its
# official module through the Go module proxy with `go install PKG@VERSION`
# (the module's own go.mod and go.sum, CGO_ENABLED=0, -trimpath), cached in
# ${CRD_SAFETY_GO_BIN_DIR:-<repo>/target/go-bin}/NAME-VERSION/bin.
#
# usage: scripts/go-bin.sh NAME VERSION CHECK PKG... [-- LDFLAGS]
#   NAME     the cache entry (helm, krew)
#   VERSION  the module version (v3.21.4)
#   CHECK    a command run in the bin dir that succeeds once the tools are
#            there (e.g. './helm version --template {{.Version}} | grep -qx v3.21.4')
#   PKG      packages without @VERSION (helm.sh/helm/v3/cmd/helm)
#
# stdout: exactly one line, the absolute path of the bin directory.
# exit 0: success; 3: Go missing or the proxy unreachable (one line on stderr
# starting with "cannot build NAME: ", so tests skip, or fail with CI=true);
# 1: anything else (a compile error).
set -euo pipefail
[[ $# -ge 4 ]] || { echo "usage: go-bin.sh NAME VERSION CHECK PKG... [-- LDFLAGS]" >&2; exit 1; }
NAME="$1" VERSION="$2" CHECK="$3"
shift 3
PKGS=()
# `-s -w` leaves the debug info out of the binary and `-dwarf=false` (below)
# keeps the compiler from writing it for every package first (envtest-assets.sh).
LDFLAGS="-s -w"
while [[ $# -gt 0 ]]; do
    if [[ "$1" == "--" ]]; then LDFLAGS="$LDFLAGS ${*:2}"; break; fi
    PKGS+=("$1"); shift
done

log() { printf 'go-bin %s: %s\n' "$NAME" "$*" >&2; }
cannot_build() { printf 'cannot build %s: %s\n' "$NAME" "$*" >&2; exit 3; }
fail() { printf 'go-bin %s: error: %s\n' "$NAME" "$*" >&2; exit 1; }
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -n 1 | tr -d '\r' || true; }
ready() { [[ -d "$1" ]] && (cd "$1" && bash -c "$CHECK") >/dev/null 2>&1; }

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CACHE_ROOT="${CRD_SAFETY_GO_BIN_DIR:-$REPO_ROOT/target/go-bin}"
mkdir -p "$CACHE_ROOT" || fail "cannot create cache dir $CACHE_ROOT"
CACHE_ROOT="$(cd "$CACHE_ROOT" && pwd -P)"
BIN="$CACHE_ROOT/$NAME-$VERSION/bin"

if ready "$BIN"; then printf '%s\n' "$BIN"; exit 0; fi

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
    exec 9>"$CACHE_ROOT/.$NAME.lock"
    if ! flock -n 9; then
        log "another build is running, waiting"
        flock 9
    fi
    if ready "$BIN"; then printf '%s\n' "$BIN"; exit 0; fi
fi

LOGF="$CACHE_ROOT/last-$NAME.log"
start=$SECONDS
module="${PKGS[0]%%/cmd/*}"
log "fetching $module@$VERSION via $("$GO" env GOPROXY)"
# Outside any module, `go mod download` only needs the module path.
if ! (cd "$CACHE_ROOT" && "$GO" mod download "$module@$VERSION") >"$LOGF" 2>&1; then
    cannot_build "cannot download $module@$VERSION (GOPROXY=$("$GO" env GOPROXY)): $(last_line "$LOGF")"
fi
log "building $NAME $VERSION (a few minutes on first run)"
for pkg in "${PKGS[@]}"; do
    if ! (cd "$CACHE_ROOT" && GOBIN="$BIN.tmp" "$GO" install -trimpath -buildvcs=false \
            -gcflags=all=-dwarf=false -ldflags "$LDFLAGS" "$pkg@$VERSION") >"$LOGF" 2>&1; then
        fail "go install $pkg@$VERSION failed: $(last_line "$LOGF")"
    fi
done
mv -f "$BIN.tmp"/* "$BIN/"
rmdir "$BIN.tmp" 2>/dev/null || true
ready "$BIN" || fail "the built tools do not pass: $CHECK"
log "ready ($((SECONDS - start))s)"
printf '%s\n' "$BIN"
