# image-server: build with the workspace, run on Debian 12 with libheif (HEIC) from apt.
# Build from the repository root: docker build -f deploy/image-server.Dockerfile .
FROM rust:1.95-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends libheif-dev cmake nasm pkg-config clang \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release -p image-server --locked \
 && cp target/release/image-server /usr/local/bin/image-server

FROM debian:bookworm-slim
# libheif1 decodes HEIC through libde265 (pulled in as a dependency); libjpeg-turbo and
# libwebp are linked statically by their crates.
RUN apt-get update \
 && apt-get install -y --no-install-recommends libheif1 ca-certificates curl \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/image-server image \
 && mkdir -p /var/lib/image-server && chown image /var/lib/image-server
COPY --from=build /usr/local/bin/image-server /usr/local/bin/image-server
USER image
WORKDIR /var/lib/image-server
# glibc: allocations of 2 MiB and more (decoded full-size pictures, above all libheif's) go
# straight to mmap and back to the system when freed, instead of growing per-thread heaps that
# are kept (peak RSS at concurrency 2: 37-77 MB in bench/image/RESULTS.md; glibc's dynamic
# default reached 108 MB on the PNG and 167 MB on HEIC). Below 2 MiB (a
# 9 MP JPEG's bytes, its 1/4-scale decode, the output) buffers are reused from the heap without
# fresh page faults: 1 MiB cost 10% of the JPEG rate (apps/image-server/README.md).
ENV MALLOC_MMAP_THRESHOLD_=2097152 \
    LISTEN=0.0.0.0:3000 \
    DATA_DIR=/var/lib/image-server \
    STORAGE_URL=file:///var/lib/image-server/images \
    RUST_LOG=info
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s CMD curl -fsS http://127.0.0.1:3000/admin/health || exit 1
ENTRYPOINT ["/usr/local/bin/image-server"]
