#!/usr/bin/env bash
# Whole-directory upgrades: one `crd-safety diff OLD_DIR NEW_DIR` against
# crdify run once per CRD present on both sides, as a CI job would loop it.
# crdify compares one CRD per file, so each side's documents are first
# written one CRD per file (named after the CRD) into a temporary directory;
# crd-safety reads the directories as they are (istio ships one file of
# fifteen CRDs). Not part of the test suite; run
# it by hand after scripts/bench-crdify.sh has built crdify:
#
#   RUNS=5 scripts/bench-crdify-dirs.sh
#
# Prints, per directory pair, the median wall time of each side (the whole
# loop for crdify), the ratio, and the largest peak RSS of any one process.
#
# Environment: RUNS (default 5), CRD_SAFETY_CORPUS, CRDIFY (default
# target/bench-tools/crdify), CRD_SAFETY_BIN (a crd-safety binary to use
# instead of building one).
set -euo pipefail

REPO="$(cd "$(dirname "$0")/.." && pwd)"
CORPUS="${CRD_SAFETY_CORPUS:-$REPO/../shared/corpus}"
RUNS="${RUNS:-5}"
CRDIFY="${CRDIFY:-$REPO/target/bench-tools/crdify}"
OURS="${CRD_SAFETY_BIN:-$REPO/target/release/kubectl-crd_safety}"

die() { printf 'bench-crdify-dirs: error: %s\n' "$*" >&2; exit 1; }
[[ -x "$CRDIFY" ]] || die "crdify not found at $CRDIFY (run scripts/bench-crdify.sh once, or set CRDIFY)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$RUNS'"
[[ -x /usr/bin/time ]] || die "/usr/bin/time (GNU time) is needed: apt-get install time"
if [[ -z "${CRD_SAFETY_BIN:-}" ]]; then
    (cd "$REPO" && cargo build --release --quiet) || die "cargo build --release failed"
fi

PAIRS=(
    "prometheus-operator prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0 prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0"
    "eck-full-bases      eck-full-bases/v3.0.0 eck-full-bases/v3.5.0"
    "istio               istio/1.28.0 istio/1.30.0"
)

SPLIT="$(mktemp -d)"
trap 'rm -rf "$SPLIT"' EXIT

# split DIR OUT: each CustomResourceDefinition document of DIR's YAML files
# as OUT/<metadata.name>.yaml.
split() {
    mkdir -p "$2"
    for f in "$1"/*.yaml; do
        awk -v out="$2" '
            function flush() {
                if (crd && name != "") { f = out "/" name ".yaml"; printf "%s", doc > f; close(f) }
                doc = ""; name = ""; meta = 0; crd = 0
            }
            /^---/ { flush(); next }
            { doc = doc $0 "\n" }
            /^kind: *CustomResourceDefinition/ { crd = 1 }
            /^metadata:/ { meta = 1; next }
            /^[^ #]/ { meta = 0 }
            meta && name == "" && /^  name:/ { name = $2 }
            END { flush() }' "$f"
    done
}

now_ms() { date +%s%3N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

printf '%-20s %6s | %12s %12s %7s | %10s %10s\n' pair CRDs "crd-safety" "crdify loop" ratio "RSS ours" "RSS crdify"
for line in "${PAIRS[@]}"; do
    read -r name old new <<<"$line"
    split "$CORPUS/$old" "$SPLIT/$name/old"
    split "$CORPUS/$new" "$SPLIT/$name/new"
    files=()
    for f in "$SPLIT/$name/old"/*.yaml; do
        [[ -f "$SPLIT/$name/new/$(basename "$f")" ]] && files+=("$(basename "$f")")
    done
    ours=() theirs=() rss_ours=0 rss_theirs=0
    for _ in $(seq "$RUNS"); do
        t0=$(now_ms)
        /usr/bin/time -f '%M' -o /tmp/bench-dirs-rss "$OURS" diff "$CORPUS/$old" "$CORPUS/$new" -o json >/dev/null 2>&1 || true
        t1=$(now_ms)
        ours+=($((t1 - t0)))
        r=$(tail -1 /tmp/bench-dirs-rss); ((r > rss_ours)) && rss_ours=$r
        t0=$(now_ms)
        for f in "${files[@]}"; do
            /usr/bin/time -f '%M' -o /tmp/bench-dirs-rss "$CRDIFY" "file://$SPLIT/$name/old/$f" "file://$SPLIT/$name/new/$f" -o json >/dev/null 2>&1 || true
            r=$(tail -1 /tmp/bench-dirs-rss); ((r > rss_theirs)) && rss_theirs=$r
        done
        t1=$(now_ms)
        theirs+=($((t1 - t0)))
    done
    mo=$(printf '%s\n' "${ours[@]}" | median)
    mt=$(printf '%s\n' "${theirs[@]}" | median)
    printf '%-20s %6d | %9d ms %9d ms %6.1fx | %7.1f MB %7.1f MB\n' "$name" "${#files[@]}" "$mo" "$mt" \
        "$(awk -v a="$mt" -v b="$mo" 'BEGIN {print a / b}')" \
        "$(awk -v r="$rss_ours" 'BEGIN {print r / 1024}')" "$(awk -v r="$rss_theirs" 'BEGIN {print r / 1024}')"
done
echo "wall: median of $RUNS runs, process start to exit (the whole loop for crdify); RSS: largest single process."
