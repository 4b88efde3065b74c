# GPU image for dflash-evald. NOT BUILT OR RUN IN THIS PROJECT'S CI (no Docker
# engine there; hadolint is not packaged by Debian either): the repository's
# tests only check its structure (tests/deploy/manifests_test.cc). Treat it as
# a starting point and verify on a GPU host.
#
#   docker build -t dflash-evald .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 \
#     -v /srv/dflash:/data:ro -v dflash-state:/var/lib/dflash-evald \
#     -v "$PWD/config.yaml:/etc/dflash-evald/config.yaml:ro" dflash-evald
#
# Every pin lives here. Bump CUDA_VERSION and LIBTORCH_VERSION together
# (the libtorch zip is built for one CUDA minor version).
ARG CUDA_VERSION=12.4.1
ARG UBUNTU_VERSION=22.04
ARG CUDA_IMAGE=nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION}
ARG RUNTIME_IMAGE=nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION}
ARG LIBTORCH_VERSION=2.4.1
ARG LIBTORCH_CUDA=cu124
ARG LIBTORCH_SHA256=""

# ---- build: CUDA toolkit + CUDA libtorch + the distribution's libraries ----
FROM ${CUDA_IMAGE} AS build
ARG LIBTORCH_VERSION
ARG LIBTORCH_CUDA
ARG LIBTORCH_SHA256
ENV DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build git curl unzip ca-certificates pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
      libspdlog-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libpq-dev zlib1g-dev \
      libyaml-cpp-dev prometheus-cpp-dev \
    && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL "https://download.pytorch.org/libtorch/${LIBTORCH_CUDA}/libtorch-cxx11-abi-shared-with-deps-${LIBTORCH_VERSION}%2B${LIBTORCH_CUDA}.zip" \
      -o /tmp/libtorch.zip \
    && if [ -n "${LIBTORCH_SHA256}" ]; then echo "${LIBTORCH_SHA256}  /tmp/libtorch.zip" | sha256sum -c -; fi \
    && unzip -q /tmp/libtorch.zip -d /opt && rm /tmp/libtorch.zip
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH=/opt/libtorch -DDFLASH_BUILD_TESTS=OFF \
    && cmake --build build \
    && cmake --install build --prefix /opt/dflash

# ---- runtime: CUDA runtime, the shared libraries, the two binaries ----
FROM ${RUNTIME_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
# Runtime halves of the build's -dev packages (Ubuntu 22.04 names).
RUN apt-get update && apt-get install -y --no-install-recommends \
      libgrpc++1 libprotobuf23 libspdlog1 libfmt8 libsqlite3-0 libpq5 libyaml-cpp0.7 \
      libprometheus-cpp-core1.0 zlib1g ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 dflash \
    && useradd --system --uid 10001 --gid dflash --home /var/lib/dflash-evald \
         --shell /usr/sbin/nologin dflash \
    && mkdir -p /var/lib/dflash-evald /etc/dflash-evald \
    && chown dflash:dflash /var/lib/dflash-evald
COPY --from=build /opt/libtorch/lib /opt/libtorch/lib
COPY --from=build /opt/dflash/bin /usr/local/bin
COPY deploy/config.example.yaml /etc/dflash-evald/config.example.yaml
ENV LD_LIBRARY_PATH=/opt/libtorch/lib
USER dflash
WORKDIR /var/lib/dflash-evald
VOLUME ["/var/lib/dflash-evald"]
EXPOSE 50051 9464
# The gRPC health service: NOT_SERVING (exit 1) until the preload finished.
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
  CMD ["dflash-eval", "--server", "127.0.0.1:50051", "--timeout", "4", "health"]
# 0.0.0.0 needs --auth-token-file (or --tls-client-ca, or --insecure-allow-remote):
# without one the server refuses to start and says so (README "Security").
# Flags after the image name are appended (e.g. --config /etc/dflash-evald/config.yaml);
# a flag given there overrides the same key in the config file.
ENTRYPOINT ["dflash-evald", "--listen", "0.0.0.0:50051", "--state-dir", "/var/lib/dflash-evald", \
            "--data-root", "/data", "--device", "auto", "--metrics-listen", "0.0.0.0:9464"]
