# image-server: build with the workspace, run on Debian 12 with libheif (HEIC) and libtiff (the
# TIFF codings the tiff crate lacks) from apt.
# Build from the repository root: docker build -f deploy/image-server.Dockerfile .
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libheif-dev libtiff-dev cmake nasm pkg-config clang \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release -p image-server --locked \
 && cp target/release/image-server /usr/local/bin/image-server

FROM debian:bookworm-slim
# libheif1 decodes HEIC through libde265 (pulled in as a dependency); libjpeg-turbo and
# libwebp are linked statically by their crates; libtiff6 reads the TIFF files the tiff crate
# refuses.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libheif1 libtiff6 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/image-server image \
 && mkdir -p /var/lib/image-server && chown image /var/lib/image-server
COPY --from=build /usr/local/bin/image-server /usr/local/bin/image-server
USER image
WORKDIR /var/lib/image-server
# The binary sets glibc's mmap threshold to 2 MiB itself (MALLOC_MMAP_THRESHOLD_ overrides it;
# apps/image-server/README.md, "Configuration").
ENV LISTEN=0.0.0.0:3000 \
    DATA_DIR=/var/lib/image-server \
    STORAGE_URL=file:///var/lib/image-server/images \
    RUST_LOG=info
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s CMD curl -fsS http://127.0.0.1:3000/admin/health || exit 1
ENTRYPOINT ["/usr/local/bin/image-server"]
