# One image, two binaries: /garage-webhook and /garage-reconciler. The chart runs each in its
# own Deployment with its own ServiceAccount; nothing else is in the image.
#
#   docker build -t ghcr.io/garage-operator/garage-operator:0.1.0 .
#
# The binaries link glibc dynamically and run on distroless/cc (glibc and libgcc only) as the
# nonroot user (65532), matching the chart's securityContext. A static musl build was measured
# and dropped: musl's allocator doubled the webhook's CPU per review and put a 500-object
# conversion over its 25 ms budget (docs/performance.md). Build and run stages are both
# Debian 12, so the glibc the binaries were linked against is the one they run on.

FROM docker.io/library/rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked \
      -p webhook --bin garage-webhook \
      -p reconciler --bin garage-reconciler \
 && mkdir /out \
 && cp target/release/garage-webhook target/release/garage-reconciler /out/

FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/garage-webhook /out/garage-reconciler /
# One malloc arena: glibc gives each busy thread its own, and together they kept 6.6 MiB more
# freed memory after the webhook's live-read reviews (measured by `cargo xtask bench webhook`,
# which runs the binary with this same setting, read from here).
ENV GLIBC_TUNABLES=glibc.malloc.arena_max=1
USER 65532:65532
# The chart sets the command of each Deployment; without one the image runs the reconciler.
ENTRYPOINT ["/garage-reconciler"]
