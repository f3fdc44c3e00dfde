# syntax=docker/dockerfile:1
# The billing server in a container. Build:   docker build -t billing-server .
# Run (SQLite in the volume /data):           docker run -p 8080:8080 -v billing-data:/data billing-server
# With PostgreSQL: docker-compose.yml. README.md, "Docker", has the details.

# Build stage: the Rust toolchain and its C compiler are all the build needs (libpq and SQLite
# are compiled from source, webhook TLS is rustls: no OpenSSL, no pkg-config).
FROM rust:1-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p billing-server \
 && cp target/release/billing-server /usr/local/bin/billing-server

# Runtime stage: the binary, the system CA certificates (trusted for https webhook endpoints),
# and an unprivileged user owning the data directory.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /data --shell /usr/sbin/nologin billing \
 && mkdir -p /data \
 && chown billing:billing /data
COPY --from=build /usr/local/bin/billing-server /usr/local/bin/billing-server
USER billing
# The default database `./billing.db` is /data/billing.db: keep /data in a volume.
WORKDIR /data
VOLUME /data
# In the environment rather than only in CMD, so that it holds for any command given to `docker run`.
ENV BILLING_LISTEN=0.0.0.0:8080
EXPOSE 8080
# GET /healthz with bash's /dev/tcp (the image has no curl); healthy on a `200` status line.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["billing-server"]
# Serving is what the binary does without a command; its options come before any command.
CMD ["--listen", "0.0.0.0:8080"]
