#!/usr/bin/env bash
# Provide krew and its manifest validator (validate-krew-manifest) for the
# release tests: sigs.k8s.io/krew at a pinned version, built by go-bin.sh
# (stdout: the directory holding both; exit 3 when they cannot be built).
# v0.4.3 is the newest krew the Go module proxy serves here.
set -euo pipefail
KREW_VERSION="v0.4.3"
exec bash "$(dirname "${BASH_SOURCE[0]}")/go-bin.sh" krew "$KREW_VERSION" \
    "./krew version 2>/dev/null | grep -q $KREW_VERSION && test -x ./validate-krew-manifest" \
    sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest \
    -- "-X sigs.k8s.io/krew/internal/version.gitTag=$KREW_VERSION"
