#!/usr/bin/env bash
# The GitHub Action's entry point (action.yml): install a released
# crd-safety, verifying the archive against the release's checksums.txt,
# then `diff` each path at the pull request's base (a git:REV:PATH source)
# with the same path in the checkout.
#
# Inputs come as INPUT_* variables (see action.yml). Also read:
#   CRD_SAFETY_RELEASES  where releases are (default the GitHub releases);
#                        a file:// URL works, which the tests use.
#   RUNNER_TEMP, GITHUB_OUTPUT  set by GitHub Actions.
# Exit: the exit code of the last failing diff (1 findings, 2 input), or 0.
set -euo pipefail
version="${INPUT_VERSION:?}"
releases="${CRD_SAFETY_RELEASES:-https://github.com/crd-safety/crd-safety/releases/download}"
tmp="${RUNNER_TEMP:-$(mktemp -d)}/crd-safety-$version"
mkdir -p "$tmp"

case "$(uname -s)-$(uname -m)" in
    Linux-x86_64) target=x86_64-unknown-linux-musl ;;
    Linux-aarch64 | Linux-arm64) target=aarch64-unknown-linux-musl ;;
    Darwin-x86_64) target=x86_64-apple-darwin ;;
    Darwin-arm64) target=aarch64-apple-darwin ;;
    *) echo "::error::crd-safety: no release for $(uname -s) $(uname -m)"; exit 2 ;;
esac
archive="kubectl-crd_safety-$version-$target.tar.gz"
curl -fsSL -o "$tmp/$archive" "$releases/$version/$archive"
curl -fsSL -o "$tmp/checksums.txt" "$releases/$version/checksums.txt"
expected="$(awk -v f="$archive" '$2 == f { print $1 }' "$tmp/checksums.txt")"
actual="$( (sha256sum "$tmp/$archive" 2>/dev/null || shasum -a 256 "$tmp/$archive") | cut -d' ' -f1)"
if [[ -z "$expected" || "$expected" != "$actual" ]]; then
    echo "::error::crd-safety: $archive does not match checksums.txt (expected ${expected:-nothing}, got $actual)"
    exit 2
fi
tar -xzf "$tmp/$archive" -C "$tmp"
bin="$tmp/kubectl-crd_safety"

args=()
[[ -n "${INPUT_CONFIG:-}" ]] && args+=(--config "$INPUT_CONFIG")
[[ -n "${INPUT_BASELINE:-}" ]] && args+=(--baseline "$INPUT_BASELINE")
base="${INPUT_BASE:-HEAD~1}"
status=0
sarif_parts=()
for path in ${INPUT_PATHS:?}; do
    case "${INPUT_OUTPUT:-github}" in
        sarif)
            part="$tmp/$(echo "$path" | tr '/' '_').sarif"
            "$bin" diff "git:$base:$path" "$path" -o sarif "${args[@]+"${args[@]}"}" > "$part" || status=$?
            sarif_parts+=("$part")
            ;;
        *)
            "$bin" diff "git:$base:$path" "$path" -o github "${args[@]+"${args[@]}"}" || status=$?
            ;;
    esac
    # 1 is findings; anything above is a failure worth stopping for.
    [[ $status -le 1 ]] || break
done
if [[ ${#sarif_parts[@]} -gt 0 ]]; then
    # One run per path in one log.
    python3 - "${INPUT_SARIF_FILE:-crd-safety.sarif}" "${sarif_parts[@]}" <<'PY'
import json, sys
out, parts = sys.argv[1], sys.argv[2:]
logs = [json.load(open(p)) for p in parts]
merged = dict(logs[0]); merged["runs"] = [r for l in logs for r in l["runs"]]
json.dump(merged, open(out, "w"), indent=2)
PY
fi
[[ -n "${GITHUB_OUTPUT:-}" ]] && echo "exit-code=$status" >> "$GITHUB_OUTPUT"
exit "$status"
