#!/usr/bin/env bash
# Rewrites link/code-order.txt: the functions the plugin runs in typical
# offline runs, costliest first, for the linker to lay out together
# (link/README.md says why). Run it by hand after larger changes; a stale
# list only places fewer functions, it never breaks the build.
#
#   scripts/code-order.sh
#
# Needs valgrind (callgrind) and the shared corpus (../shared/corpus or
# CRD_SAFETY_CORPUS). Takes about a minute.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
CORPUS="${CRD_SAFETY_CORPUS:-$REPO/../shared/corpus}"
BIN="$REPO/target/release/kubectl-crd_safety"
OUT="$REPO/link/code-order.txt"

die() { printf 'code-order: error: %s\n' "$*" >&2; exit 1; }
command -v valgrind >/dev/null || die "valgrind is needed: apt-get install valgrind"
[[ -d "$CORPUS" ]] || die "corpus not found at $CORPUS (set CRD_SAFETY_CORPUS)"
(cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
n=0
profile() {
    n=$((n + 1))
    # Exit codes 0 and 1 are reports; anything else is a failed run.
    local rc=0
    (cd "$REPO" && valgrind --tool=callgrind --demangle=no --compress-strings=no \
        --callgrind-out-file="$work/out.$n" "$BIN" "$@" >/dev/null 2>"$work/err.$n") || rc=$?
    ((rc <= 1)) || die "run $n ($*) exited $rc: $(tail -3 "$work/err.$n")"
}
profile diff examples/widgets/old.yaml examples/widgets/new.yaml
profile diff "$CORPUS/istio/1.28.0" "$CORPUS/istio/1.30.0" -o json
profile diff "$CORPUS/istio/1.28.0" "$CORPUS/istio/1.30.0"
profile diff "$CORPUS/prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0/0prometheusCustomResourceDefinition.yaml" \
    "$CORPUS/prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0/0prometheusCustomResourceDefinition.yaml" -o json
profile lint "$CORPUS/gateway-api-experimental/v1.6.1" -o json
profile diff "$CORPUS/cert-manager/v1.6.3" "$CORPUS/cert-manager/v1.7.0" -o sarif
profile diff "$CORPUS/eck-full-bases/v3.0.0" "$CORPUS/eck-full-bases/v3.5.0" -o json

# Sum each function's own cost over the runs; keep linkable names only.
for f in "$work"/out.*; do
    awk '/^fn=/ { name = substr($0, 4); sub(/^\([0-9]+\) /, "", name); next }
         /^[0-9+-]/ && name != "" { cost[name] += $2 }
         END { for (n in cost) print cost[n], n }' "$f"
done | awk '{ c[$2] += $1 } END { for (n in c) print c[n], n }' |
    sort -k1,1nr -k2,2 | awk '$2 ~ /^[A-Za-z_][A-Za-z0-9_.$]*$/ { print $2 }' >"$work/order"
mkdir -p "$REPO/link"
mv "$work/order" "$OUT"
echo "code-order: $(wc -l <"$OUT") functions in $OUT"
