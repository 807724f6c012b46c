# One image, two static binaries: /garage-webhook and /garage-reconciler. The chart runs each
# in its own Deployment with its own ServiceAccount; nothing else is in the image.
#
#   docker build -t ghcr.io/garage-operator/garage-operator:0.1.0 .
#
# The binaries are linked statically against musl, so the final stage needs no libc and runs
# on distroless/static as the nonroot user (65532), matching the chart's securityContext.

FROM docker.io/library/rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends musl-tools \
 && rm -rf /var/lib/apt/lists/* \
 && rustup target add x86_64-unknown-linux-musl
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked --target x86_64-unknown-linux-musl \
      -p webhook --bin garage-webhook \
      -p reconciler --bin garage-reconciler \
 && mkdir /out \
 && cp target/x86_64-unknown-linux-musl/release/garage-webhook \
       target/x86_64-unknown-linux-musl/release/garage-reconciler /out/

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/garage-webhook /out/garage-reconciler /
USER 65532:65532
# The chart sets the command of each Deployment; without one the image runs the reconciler.
ENTRYPOINT ["/garage-reconciler"]
