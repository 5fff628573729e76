# The crd-safety image: the statically linked plugin binary and nothing
# else (no shell, no libc, no CA bundle: `serve` trusts the service
# account's CA, and the CLI the kubeconfig's). Runs as a non-root user.
#
# The static (musl) binary of each architecture is put in
# target/image/<arch>/ first: scripts/build-image.sh does it for this
# machine, the release workflow for amd64 and arm64 from the release
# archives. `FROM scratch` needs no base image pull, so the build works
# offline (buildah and podman read this file too).
FROM scratch
ARG TARGETARCH=amd64
COPY target/image/${TARGETARCH}/kubectl-crd_safety /kubectl-crd_safety
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/kubectl-crd_safety"]
CMD ["--help"]
