# The crd-safety image: the statically linked plugin binary and nothing
# else (no shell, no libc, no CA bundle: `serve` trusts the service
# account's CA, and the CLI the kubeconfig's). Runs as a non-root user.
#
# Build the binary first (musl, fully static), then the image:
#   rustup target add x86_64-unknown-linux-musl   # once; Debian: apt-get install musl-tools
#   cargo build --release --target x86_64-unknown-linux-musl
#   docker build -t ghcr.io/crd-safety/crd-safety:0.1.0 .
# `FROM scratch` needs no base image pull, so the build works offline
# (buildah and podman read this file too).
FROM scratch
COPY target/x86_64-unknown-linux-musl/release/kubectl-crd_safety /kubectl-crd_safety
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/kubectl-crd_safety"]
CMD ["--help"]
