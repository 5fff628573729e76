#!/usr/bin/env bash
# Provide real `kube-apiserver` and `etcd` binaries for the live (envtest-style)
# tests, built from the official Go modules through the Go module proxy.
#
# stdout: exactly one line, the absolute path of a directory containing the
#         executables `kube-apiserver` and `etcd` (plus a `kubectl` symlink when
#         one is found on PATH, and `kube-controller-manager` when asked for).
#         Everything else goes to stderr.
# exit 0: success
# exit 3: the binaries cannot be built in this environment (Go missing, module
#         proxy unreachable, download failed); one line on stderr starting with
#         "cannot build envtest binaries: ". Callers may skip live tests.
# exit 1: anything else (e.g. a compile error) - a real failure.
#
# Usage: envtest-assets.sh [VERSION] [--with-controller-manager]
#   VERSION: a listed minor, e.g. 1.37
#   --with-controller-manager: also build kube-controller-manager (the live
#     tests of `migrate --engine server` run its storage-version migrator)
#
# Environment:
#   CRD_SAFETY_KUBE_VERSION the Kubernetes version to provide when no argument
#                           names one (default: DEFAULT_VERSION below)
#   KUBEBUILDER_ASSETS      use this directory if it holds both binaries
#   CRD_SAFETY_ENVTEST_DIR  cache root (default: <repo>/target/envtest)
#   GO                      go binary to use (default: `go` on PATH, then /usr/local/go/bin/go)
#   GOMODCACHE, GOCACHE, GOPROXY, GOFLAGS, ...  honoured as usual
set -euo pipefail

# ---- pinned versions --------------------------------------------------------
# The newest patch of every Kubernetes minor the live tests can run against
# (k8s.io/kubernetes, for kube-apiserver). The default is the one the plain
# `cargo test` uses; CRD_SAFETY_KUBE_VERSION (or the first argument) picks
# another, as a minor (`1.37`) or an exact listed version (`v1.37.2`).
KNOWN_VERSIONS="v1.30.14 v1.31.14 v1.32.13 v1.33.13 v1.34.4 v1.35.4 v1.36.3 v1.37.2"
DEFAULT_VERSION="v1.34.4"
ETCD_VERSION="v3.6.16"   # go.etcd.io/etcd/server/v3 (etcd)
# -----------------------------------------------------------------------------

log() { printf 'envtest-assets: %s\n' "$*" >&2; }

# The listed version a request names: `1.37`, `v1.37` or `v1.37.2`.
resolve_version() {
    local want="${1#v}" v
    for v in $KNOWN_VERSIONS; do
        if [[ "${v#v}" == "$want" || "${v#v}" == "$want".* ]]; then
            printf '%s\n' "$v"
            return 0
        fi
    done
    return 1
}
WITH_KCM=no
args=()
for a in "$@"; do
    case "$a" in
        --with-controller-manager) WITH_KCM=yes ;;
        *) args+=("$a") ;;
    esac
done
requested="${args[0]:-${CRD_SAFETY_KUBE_VERSION:-$DEFAULT_VERSION}}"
if ! K8S_VERSION="$(resolve_version "$requested")"; then
    printf 'envtest-assets: error: Kubernetes %s is not one of the listed versions (%s)\n' \
        "$requested" "$KNOWN_VERSIONS" >&2
    exit 1
fi
cannot_build() { printf 'cannot build envtest binaries: %s\n' "$*" >&2; exit 3; }
fail() { printf 'envtest-assets: error: %s\n' "$*" >&2; exit 1; }

# last non-empty line of a file, for one-line error messages
last_line() { grep -v '^[[:space:]]*$' "$1" | tail -n 1 | tr -d '\r' || true; }

# -- does <dir> hold working binaries (optionally of the pinned versions)? ----
assets_ok() {
    local dir="$1" check_versions="$2"
    [[ -x "$dir/kube-apiserver" && -x "$dir/etcd" ]] || return 1
    if [[ "$WITH_KCM" == yes ]]; then
        [[ -x "$dir/kube-controller-manager" ]] || return 1
        if [[ "$check_versions" == yes ]]; then
            [[ "$("$dir/kube-controller-manager" --version 2>/dev/null)" == "Kubernetes $K8S_VERSION" ]] || return 1
        fi
    fi
    local kv ev
    kv="$("$dir/kube-apiserver" --version 2>/dev/null)" || return 1
    ev="$("$dir/etcd" --version 2>/dev/null)" || return 1
    if [[ "$check_versions" == yes ]]; then
        [[ "$kv" == "Kubernetes $K8S_VERSION" ]] || return 1
        [[ "$ev" == *"etcd Version: ${ETCD_VERSION#v}"* ]] || return 1
    fi
    return 0
}

link_kubectl() {
    local dir="$1" k
    k="$(command -v kubectl 2>/dev/null || true)"
    # only ever replace our own symlink, never a real file someone put there
    if [[ "$k" == /* ]] && [[ ! -e "$dir/kubectl" || -L "$dir/kubectl" ]]; then
        ln -sfn "$k" "$dir/kubectl"
    fi
    return 0
}

# ---- 1. KUBEBUILDER_ASSETS ---------------------------------------------------
if [[ -n "${KUBEBUILDER_ASSETS:-}" ]]; then
    if assets_ok "$KUBEBUILDER_ASSETS" no; then
        (cd "$KUBEBUILDER_ASSETS" && pwd -P)
        exit 0
    fi
    log "KUBEBUILDER_ASSETS=$KUBEBUILDER_ASSETS does not hold working kube-apiserver and etcd; building instead"
fi

# ---- 2. cached build ---------------------------------------------------------
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
CACHE_ROOT="${CRD_SAFETY_ENVTEST_DIR:-$REPO_ROOT/target/envtest}"
mkdir -p "$CACHE_ROOT" || fail "cannot create cache dir $CACHE_ROOT"
CACHE_ROOT="$(cd "$CACHE_ROOT" && pwd -P)"
BASE="$CACHE_ROOT/k8s-$K8S_VERSION"
BIN="$BASE/bin"

if assets_ok "$BIN" yes; then
    link_kubectl "$BIN"
    printf '%s\n' "$BIN"
    exit 0
fi

# ---- Go toolchain --------------------------------------------------------------
GO="${GO:-}"
if [[ -z "$GO" ]]; then
    GO="$(command -v go 2>/dev/null || true)"
    [[ -z "$GO" && -x /usr/local/go/bin/go ]] && GO=/usr/local/go/bin/go
fi
[[ -n "$GO" && -x "$GO" ]] || cannot_build "Go toolchain not found (install Go >= 1.24, or set KUBEBUILDER_ASSETS)"
"$GO" version >/dev/null 2>&1 || cannot_build "'$GO version' failed"

export GO111MODULE=on
export GOWORK=off
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
# Keep the user's module/build caches; only fall back to dirs under the cache
# root when Go cannot determine them (e.g. no $HOME in a CI sandbox).
gocache="$("$GO" env GOCACHE 2>/dev/null || true)"
if [[ -z "$gocache" || "$gocache" == off ]]; then export GOCACHE="$CACHE_ROOT/go-build"; fi
if [[ -z "$("$GO" env GOMODCACHE 2>/dev/null || true)" ]]; then export GOMODCACHE="$CACHE_ROOT/go-mod"; fi

mkdir -p "$BIN" "$BASE/work"

# Serialise concurrent builders (parallel test binaries, several shells).
if command -v flock >/dev/null 2>&1; then
    exec 9>"$BASE/.lock"
    if ! flock -n 9; then
        log "another build is running, waiting for $BASE/.lock"
        flock 9
    fi
    if assets_ok "$BIN" yes; then
        link_kubectl "$BIN"
        printf '%s\n' "$BIN"
        exit 0
    fi
fi

TMPFILES=()
cleanup() { local f; for f in "${TMPFILES[@]+"${TMPFILES[@]}"}"; do rm -f "$f"; done; }
trap cleanup EXIT
trap 'exit 130' INT TERM

LOGF="$BASE/work/last-go.log"

# run_go <class> <what> <go args...>: go's stderr is streamed to our stderr and
# kept in LOGF; its stdout is discarded. class "env" => exit 3 on failure.
run_go() {
    local class="$1" what="$2"; shift 2
    if ! "$GO" "$@" 2>&1 >/dev/null | tee "$LOGF" >&2; then
        if [[ "$class" == env ]]; then
            cannot_build "$what failed (GOPROXY=$("$GO" env GOPROXY)): $(last_line "$LOGF")"
        fi
        fail "$what failed: $(last_line "$LOGF")"
    fi
}

# A placeholder main module so `go mod download` never touches some enclosing go.mod.
placeholder_gomod() { printf 'module %s\n\ngo 1.24.0\n' "$1" >go.mod; }

# Extract a string field from `go mod download -json` output.
json_field() { sed -n "s/^[[:space:]]*\"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$2" | head -n 1 | sed 's/\\"/"/g'; }

start=$SECONDS

# ---- kube-apiserver (and kube-controller-manager) ------------------------------
# Both come from k8s.io/kubernetes, built in one throwaway module.
needs_build() { # <command>
    local v
    ! v="$("$BIN/$1" --version 2>/dev/null)" || [[ "$v" != "Kubernetes $K8S_VERSION" ]]
}
k8s_commands=()
needs_build kube-apiserver && k8s_commands+=(kube-apiserver)
[[ "$WITH_KCM" == yes ]] && needs_build kube-controller-manager && k8s_commands+=(kube-controller-manager)
if [[ ${#k8s_commands[@]} -gt 0 ]]; then
    W="$BASE/work/kube-apiserver"
    mkdir -p "$W"
    cd "$W"
    rm -f go.mod go.sum
    placeholder_gomod crdsafety/envtest
    log "fetching k8s.io/kubernetes@$K8S_VERSION via $("$GO" env GOPROXY)"
    if ! "$GO" mod download -json "k8s.io/kubernetes@$K8S_VERSION" >"$W/download.json" 2>"$LOGF"; then
        err="$(json_field Error "$W/download.json")"
        [[ -n "$err" ]] || err="$(last_line "$LOGF")"
        cannot_build "cannot download k8s.io/kubernetes@$K8S_VERSION (GOPROXY=$("$GO" env GOPROXY)): $err"
    fi
    KMOD="$(json_field GoMod "$W/download.json")"
    KINFO="$(json_field Info "$W/download.json")"
    [[ -f "$KMOD" ]] || fail "go mod download did not report a go.mod file for k8s.io/kubernetes@$K8S_VERSION"

    # Staging modules: those kubernetes replaces with ./staging/src/k8s.io/<name>.
    staging_version="v0.${K8S_VERSION#v1.}"
    staging=()
    while IFS= read -r m; do staging+=("$m"); done < <(sed -n 's#^[[:space:]]*\(replace[[:space:]]\{1,\}\)\{0,1\}\(k8s\.io/[^[:space:]]*\)[[:space:]]\{1,\}=>[[:space:]]\{1,\}\./staging/.*#\2#p' "$KMOD" | sort -u)
    [[ ${#staging[@]} -gt 0 ]] || fail "found no staging replace directives in $KMOD"
    go_line="$(grep -m1 -E '^go [0-9]' "$KMOD" || echo 'go 1.24.0')"

    {
        echo "// Generated by scripts/envtest-assets.sh - throwaway module to build kube-apiserver."
        echo "module crdsafety/envtest"
        echo
        echo "$go_line"
        grep -E '^godebug ' "$KMOD" || true
        echo
        echo "require k8s.io/kubernetes $K8S_VERSION"
        echo
        echo "replace ("
        for m in "${staging[@]}"; do echo "	$m => $m $staging_version"; done
        echo ")"
    } >go.mod
    log "generated $W/go.mod (${#staging[@]} staging replaces at $staging_version)"

    minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
    build_date="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "$KINFO" 2>/dev/null || true)"
    [[ -n "$build_date" ]] || build_date="1970-01-01T00:00:00Z"
    # `-s -w` leaves the debug info out of the binary, and
    # `-gcflags=all=-dwarf=false` keeps the compiler from writing it into
    # every package first, which shortens a cold build (figures:
    # docs/BENCHMARKS.md, "Building kube-apiserver without debug info").
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
        ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.gitCommit= -X $pkg.buildDate=$build_date"
    done

    for cmd in "${k8s_commands[@]}"; do
        log "resolving $cmd dependencies (the first run downloads a few hundred MB)"
        run_go env "resolving k8s.io/kubernetes/cmd/$cmd dependencies" \
            list -deps "k8s.io/kubernetes/cmd/$cmd"
        tmp="$BIN/.$cmd.tmp.$$"
        TMPFILES+=("$tmp")
        log "building $cmd $K8S_VERSION (takes several minutes on first run)"
        # `providerless` leaves out the in-tree cloud providers, which 1.30
        # still compiles into kube-apiserver (GCE's API clients were an eighth
        # of its cold build); later versions have none, and no test uses one.
        run_go build "go build $cmd" \
            build -trimpath -buildvcs=false -tags providerless -gcflags=all=-dwarf=false \
            -ldflags "$ldflags" -o "$tmp" "k8s.io/kubernetes/cmd/$cmd"
        got="$("$tmp" --version 2>&1)" || fail "built $cmd does not run: $got"
        [[ "$got" == "Kubernetes $K8S_VERSION" ]] || fail "built $cmd reports '$got', expected 'Kubernetes $K8S_VERSION'"
        mv -f "$tmp" "$BIN/$cmd"
        log "$cmd ready ($((SECONDS - start))s)"
    done
fi

# ---- etcd ----------------------------------------------------------------------
etcd_ok() { local ev; ev="$("$1" --version 2>/dev/null)" && [[ "$ev" == *"etcd Version: ${ETCD_VERSION#v}"* ]]; }
# Every Kubernetes version runs the same etcd: take it from another version's
# directory when one has it (a hard link, or a copy across file systems)
# rather than link it again (about a minute of a cold CI run per version).
if ! etcd_ok "$BIN/etcd"; then
    for other in "$CACHE_ROOT"/k8s-*/bin/etcd; do
        [[ "$other" != "$BIN/etcd" ]] && etcd_ok "$other" || continue
        tmp="$BIN/.etcd.tmp.$$"
        TMPFILES+=("$tmp")
        if ln -f "$other" "$tmp" 2>/dev/null || cp -f "$other" "$tmp"; then
            mv -f "$tmp" "$BIN/etcd"
            log "etcd $ETCD_VERSION taken from $(dirname "$other")"
            break
        fi
    done
fi
if ! etcd_ok "$BIN/etcd"; then
    W="$BASE/work/etcd"
    mkdir -p "$W"
    cd "$W"
    rm -f go.mod go.sum
    placeholder_gomod crdsafety/envtest/etcd
    log "fetching go.etcd.io/etcd/server/v3@$ETCD_VERSION"
    if ! "$GO" mod download -json "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >"$W/download.json" 2>"$LOGF"; then
        err="$(json_field Error "$W/download.json")"
        [[ -n "$err" ]] || err="$(last_line "$LOGF")"
        cannot_build "cannot download go.etcd.io/etcd/server/v3@$ETCD_VERSION (GOPROXY=$("$GO" env GOPROXY)): $err"
    fi
    EMOD="$(json_field GoMod "$W/download.json")"
    go_line="$(grep -m1 -E '^go [0-9]' "$EMOD" 2>/dev/null || echo 'go 1.24.0')"
    {
        echo "// Generated by scripts/envtest-assets.sh - throwaway module to build etcd."
        echo "module crdsafety/envtest/etcd"
        echo
        echo "$go_line"
        echo
        echo "require go.etcd.io/etcd/server/v3 $ETCD_VERSION"
    } >go.mod
    # go.etcd.io/etcd/server/v3 is itself a main package (server/main.go -> etcdmain.Main).
    run_go env "resolving go.etcd.io/etcd/server/v3 dependencies" \
        list -deps go.etcd.io/etcd/server/v3

    tmp="$BIN/.etcd.tmp.$$"
    TMPFILES+=("$tmp")
    log "building etcd $ETCD_VERSION"
    run_go build "go build etcd" \
        build -trimpath -buildvcs=false -gcflags=all=-dwarf=false -ldflags "-s -w" \
        -o "$tmp" go.etcd.io/etcd/server/v3
    got="$("$tmp" --version 2>&1)" || fail "built etcd does not run: $got"
    [[ "$got" == *"etcd Version: ${ETCD_VERSION#v}"* ]] || fail "built etcd reports '$got', expected $ETCD_VERSION"
    mv -f "$tmp" "$BIN/etcd"
    log "etcd ready ($((SECONDS - start))s)"
fi

assets_ok "$BIN" yes || fail "binaries in $BIN failed the final --version check"
link_kubectl "$BIN"
log "built in $((SECONDS - start))s"
printf '%s\n' "$BIN"
