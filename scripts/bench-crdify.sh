#!/usr/bin/env bash
# End-to-end comparison of crd-safety with crdify (sigs.k8s.io/crdify) on the
# largest single-CRD upgrade pairs of the shared corpus. Not part of the test
# suite; run it by hand:
#
#   scripts/bench-crdify.sh            # 15 runs per tool and pair
#   RUNS=5 scripts/bench-crdify.sh     # quicker
#
# What it does:
#   1. builds crdify (pinned below) from the Go module proxy into
#      target/bench-tools/ (skipped when the pinned version is already there);
#   2. builds our release binary (cargo build --release);
#   3. for every pair, runs both tools as processes, interleaved (one run of
#      each per round, alternating which goes first), output to /dev/null:
#        kubectl-crd_safety diff OLD NEW -o json
#        crdify file://OLD file://NEW -o json
#      and prints the median wall time of each, the ratio crdify/crd-safety,
#      the median CPU time (user+sys; Go's GC runs on other threads) and the
#      peak RSS of each (largest over the runs), both from /usr/bin/time.
#
# Exit code 1 from either tool means "findings" and is normal; anything else
# marks the pair as failed for that tool (its stderr is shown).
#
# Environment:
#   RUNS               timed runs per tool and pair (default 15)
#   CRD_SAFETY_CORPUS  corpus directory (default: <repo>/../shared/corpus)
#   GO                 go binary (default: `go` on PATH, then /usr/local/go/bin/go)
#   CRDIFY             use this crdify binary instead of building one
#   CRD_SAFETY_BIN     use this crd-safety binary instead of building one
#                      (to compare two builds against the same crdify)
#
# The external-secrets bundles (25 CRDs per file) are left out: crdify
# compares one CRD per file. The 2-core machine may be busy with other
# builds, so read the figures of one run as ratios, not absolute numbers.
set -euo pipefail

# ---- pinned version -----------------------------------------------------------
CRDIFY_VERSION="v0.6.0"   # sigs.k8s.io/crdify
# --------------------------------------------------------------------------------

REPO="$(cd "$(dirname "$0")/.." && pwd)"
CORPUS="${CRD_SAFETY_CORPUS:-$REPO/../shared/corpus}"
RUNS="${RUNS:-15}"
TOOLS="$REPO/target/bench-tools"

log() { printf 'bench-crdify: %s\n' "$*" >&2; }
die() { printf 'bench-crdify: error: %s\n' "$*" >&2; exit 1; }

PAIRS=(
    "argocds        argocd-operator/0.13.0/argoproj.io_argocds.yaml argocd-operator/0.18.0/argoproj.io_argocds.yaml"
    "eck-agents     eck-full-bases/v3.0.0/agent.k8s.elastic.co_agents.yaml eck-full-bases/v3.5.0/agent.k8s.elastic.co_agents.yaml"
    "eck-es         eck-full-bases/v3.0.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml eck-full-bases/v3.5.0/elasticsearch.k8s.elastic.co_elasticsearches.yaml"
    "appsets        argo-cd/argocd-operator-0.18.0/argoproj.io_applicationsets.yaml argo-cd/argocd-operator-0.19.0/argoproj.io_applicationsets.yaml"
    "prometheuses   prometheus-operator/kube-prometheus-v0.16.0_po-v0.85.0/0prometheusCustomResourceDefinition.yaml prometheus-operator/kube-prometheus-v0.18.0_po-v0.92.0/0prometheusCustomResourceDefinition.yaml"
)

[[ -f "$CORPUS/MANIFEST.md" ]] || die "corpus not found at $CORPUS (set CRD_SAFETY_CORPUS)"
[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer, got '$RUNS'"

# ---- /usr/bin/time (peak RSS) ------------------------------------------------------
if [[ ! -x /usr/bin/time ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        log "installing GNU time"
        { apt-get update -qq && apt-get install -y -qq time; } >&2 || die "apt-get install time failed"
    else
        die "/usr/bin/time (GNU time) is needed for peak RSS: apt-get install time"
    fi
fi

# ---- crdify --------------------------------------------------------------------------
if [[ -n "${CRDIFY:-}" ]]; then
    [[ -x "$CRDIFY" ]] || die "CRDIFY=$CRDIFY is not executable"
else
    CRDIFY="$TOOLS/crdify"
    have=""
    [[ -x "$CRDIFY" ]] && have=$("$CRDIFY" version 2>/dev/null || true)
    if [[ $'\n'"$have"$'\n' != *$'\n'"version: $CRDIFY_VERSION"$'\n'* ]]; then
        GO="${GO:-$(command -v go || true)}"
        [[ -n "$GO" ]] || GO=/usr/local/go/bin/go
        [[ -x "$GO" ]] || die "Go toolchain not found (set GO, or CRDIFY to a crdify binary)"
        mkdir -p "$TOOLS"
        log "building sigs.k8s.io/crdify@$CRDIFY_VERSION into $TOOLS (first run only)"
        if ! GOBIN="$TOOLS" "$GO" install "sigs.k8s.io/crdify@$CRDIFY_VERSION" 2>"$TOOLS/install.log"; then
            # `go install m@v` also reads the module's version list (for the
            # deprecation notice); a proxy that refuses that list fails the
            # install. Building it as a tool of a throwaway module does not
            # need the list.
            log "go install m@v failed ($(grep -m1 '^go: ' "$TOOLS/install.log" || tail -n1 "$TOOLS/install.log")); building through a tool module"
            rm -rf "$TOOLS/mod" && mkdir -p "$TOOLS/mod"
            (
                cd "$TOOLS/mod"
                "$GO" mod init bench-tools.invalid/crdify >/dev/null 2>&1
                "$GO" mod edit -require="sigs.k8s.io/crdify@$CRDIFY_VERSION" -tool=sigs.k8s.io/crdify
                "$GO" mod tidy
                GOBIN="$TOOLS" "$GO" install sigs.k8s.io/crdify
            ) >&2 || die "building crdify failed"
        fi
    fi
fi
have=$("$CRDIFY" version 2>/dev/null || true)
log "crdify: $CRDIFY ($(sed -n 's/^version: //p' <<<"$have" | head -n1))"

# ---- crd-safety ------------------------------------------------------------------------
if [[ -n "${CRD_SAFETY_BIN:-}" ]]; then
    [[ -x "$CRD_SAFETY_BIN" ]] || die "CRD_SAFETY_BIN=$CRD_SAFETY_BIN is not executable"
    OURS="$CRD_SAFETY_BIN"
else
    log "cargo build --release"
    (cd "$REPO" && cargo build --release --quiet --bin kubectl-crd_safety) >&2 || die "cargo build --release failed"
    OURS="$REPO/target/release/kubectl-crd_safety"
fi
# A stale link/code-order.txt costs memory (link/README.md): say how much of
# it the binary still holds.
if command -v nm >/dev/null && [[ -f "$REPO/link/code-order.txt" ]]; then
    listed=$(grep -c . "$REPO/link/code-order.txt")
    found=$(nm "$OURS" 2>/dev/null | awk '{print $NF}' | sort -u \
        | comm -12 - <(sort -u "$REPO/link/code-order.txt") | wc -l)
    log "link order: $found of $listed listed functions are in the binary (scripts/code-order.sh records them again)"
fi

# ---- measuring -------------------------------------------------------------------------
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# run TOOL OLD NEW: one timed run; appends the wall time (ms), CPU time (ms)
# and peak RSS (KB) to $WORK/TOOL.{ms,cpu,kb}; returns 1 if the tool failed.
run() {
    local tool=$1 old=$2 new=$3 start end rc=0
    local -a cmd
    case $tool in
        ours)   cmd=("$OURS" diff "$old" "$new" -o json) ;;
        crdify) cmd=("$CRDIFY" "file://$old" "file://$new" -o json) ;;
    esac
    start=$EPOCHREALTIME
    /usr/bin/time -f '%M %U %S' -o "$WORK/rss" "${cmd[@]}" >/dev/null 2>"$WORK/$tool.err" || rc=$?
    end=$EPOCHREALTIME
    if (( rc != 0 && rc != 1 )); then
        return 1
    fi
    awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", (e - s) * 1000 }' >>"$WORK/$tool.ms"
    # GNU time prints "Command exited with non-zero status 1" first.
    tail -n1 "$WORK/rss" | awk -v kb="$WORK/$tool.kb" -v cpu="$WORK/$tool.cpu" '{
        print $1 >> kb; printf "%.0f\n", ($2 + $3) * 1000 >> cpu
    }'

}

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
maximum() { sort -g "$1" | tail -n1; }

printf '\nruns per tool and pair: %s (interleaved), crdify %s, %s cores\n\n' "$RUNS" "$CRDIFY_VERSION" "$(nproc)"
printf '%-20s | %-26s | %-26s | %-26s\n' "" "wall ms" "CPU ms" "peak RSS MB"
printf '%-12s %7s | %9s %9s %6s | %9s %9s %6s | %9s %9s %6s\n' \
    pair "size MB" crd-safety crdify ratio crd-safety crdify ratio crd-safety crdify ratio
printf '%s\n' "-------------------------------------------------------------------------------------------------"

failed=0
for entry in "${PAIRS[@]}"; do
    read -r name old_rel new_rel <<<"$entry"
    old="$CORPUS/$old_rel" new="$CORPUS/$new_rel"
    if [[ ! -f "$old" || ! -f "$new" ]]; then
        log "$name: $old_rel or $new_rel missing; skipped"
        continue
    fi
    size=$(( $(stat -c %s "$old") + $(stat -c %s "$new") ))
    rm -f "$WORK"/*.ms "$WORK"/*.cpu "$WORK"/*.kb
    status=""
    # One untimed run each (page cache, first-exec costs), then interleave.
    for tool in ours crdify; do
        run "$tool" "$old" "$new" || status+=" $tool-failed"
    done
    if [[ -z "$status" ]]; then
        rm -f "$WORK"/*.ms "$WORK"/*.cpu "$WORK"/*.kb
        for ((i = 0; i < RUNS; i++)); do
            if (( i % 2 )); then order="crdify ours"; else order="ours crdify"; fi
            for tool in $order; do
                run "$tool" "$old" "$new" || { status+=" $tool-failed"; break 2; }
            done
        done
    fi
    if [[ -n "$status" ]]; then
        failed=1
        printf '%-12s %7.2f | FAILED:%s\n' "$name" "$(awk -v b="$size" 'BEGIN { print b / 1e6 }')" "$status"
        for tool in ours crdify; do
            [[ -s "$WORK/$tool.err" ]] && sed "s/^/    $tool: /" "$WORK/$tool.err" | head -n5
        done
        continue
    fi
    ours_ms=$(median "$WORK/ours.ms") crdify_ms=$(median "$WORK/crdify.ms")
    ours_cpu=$(median "$WORK/ours.cpu") crdify_cpu=$(median "$WORK/crdify.cpu")
    ours_kb=$(maximum "$WORK/ours.kb") crdify_kb=$(maximum "$WORK/crdify.kb")
    awk -v n="$name" -v b="$size" -v o="$ours_ms" -v c="$crdify_ms" -v oc="$ours_cpu" -v cc="$crdify_cpu" \
        -v ok="$ours_kb" -v ck="$crdify_kb" '
        function ratio(x, y) { return y > 0 ? sprintf("%5.1fx", x / y) : "    -" }
        BEGIN {
            printf "%-12s %7.2f | %9.1f %9.1f %6s | %9.0f %9.0f %6s | %9.1f %9.1f %6s\n", n, b / 1e6,
                o, c, ratio(c, o), oc, cc, ratio(cc, oc), ok / 1024, ck / 1024, ratio(ck, ok)
        }'
done

printf '\nwall: median, process start to exit, output to /dev/null. CPU: median user+sys (10 ms resolution).\n'
printf 'peak RSS: largest of the runs (GNU time %%M). ratio: crdify / crd-safety.\n'
printf 'One run on a 2-core machine that may be busy with other builds: read the figures as ratios.\n'
exit "$failed"
