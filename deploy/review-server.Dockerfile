# review-server with its dashboard (issue 17): the dashboard built with Node, the release binary
# that embeds it, and a slim Debian runtime with git and CA certificates, run as a non-root user.
# Build from the repository root: docker build -f deploy/review-server.Dockerfile .
FROM node:20-bookworm-slim AS dashboard
WORKDIR /src/dashboard
COPY dashboard/package.json dashboard/package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY dashboard/ ./
RUN npm run build

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
COPY --from=dashboard /src/dashboard/dist dashboard/dist
# The dashboard is built by the stage above: the build script must not look for Node here.
ENV DASHBOARD_BUILD=0
RUN cargo build --release -p review-server --locked \
 && cp target/release/review-server /usr/local/bin/review-server

FROM debian:bookworm-slim
# git for the repositories the reviews work in, CA certificates for GitHub and the model
# providers, curl for the health check.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10002 --home-dir /var/lib/review-server review \
 && mkdir -p /var/lib/review-server && chown review /var/lib/review-server
COPY --from=build /usr/local/bin/review-server /usr/local/bin/review-server
USER 10002
WORKDIR /var/lib/review-server
# review.db, the cached clones, transcripts and skills live in DATA_DIR: keep it on a volume.
# LISTEN is 0.0.0.0 so the published port reaches it; then /api (the stored API keys among it)
# answers only with the OAuth gate on: set AUTH_SECRET, FORGE_APP_CLIENT_ID and
# FORGE_APP_CLIENT_SECRET at `docker run` (all three or none: a partial set refuses to start).
# Without them every /api request is 403 open_api_refused, unless ALLOW_OPEN_API=true, which
# only belongs behind a proxy that authenticates every request (docs/security.md, "Sign-in").
ENV LISTEN=0.0.0.0:8080 \
    ALLOW_OPEN_API=false \
    DATA_DIR=/var/lib/review-server \
    RUST_LOG=info
VOLUME ["/var/lib/review-server"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s CMD ["curl", "-fsS", "-o", "/dev/null", "http://127.0.0.1:8080/health"]
ENTRYPOINT ["/usr/local/bin/review-server"]
