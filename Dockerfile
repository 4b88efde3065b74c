# GPU image for dflash-evald. NOT BUILT OR RUN IN THIS PROJECT'S CI (no Docker
# engine there; hadolint is not packaged by Debian either): the repository's
# tests check its structure (tests/deploy/manifests_test.cc), and its build
# stage runs the same script whose build ran on the GPU test host.
#
#   docker build -t dflash-evald .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 \
#     -v /srv/dflash:/data:ro -v dflash-state:/var/lib/dflash-evald \
#     -v "$PWD/config.yaml:/etc/dflash-evald/config.yaml:ro" dflash-evald
#
# It builds the way scripts/gpu-check.sh builds on the GPU test host, which
# is where that build was proven (BENCHMARKS.md, "GPU check"): Debian 12's
# C++ libraries gathered by scripts/gpu-bundle.sh (stage deps), pip's CUDA
# torch wheel for libtorch (its headers, CMake config and libraries), and
# the bundle's headers searched before the copies of protobuf and fmt that
# the wheel ships (DFLASH_FIRST_INCLUDE_DIRS).
#
# Every pin lives here. CUDA_VERSION, LIBTORCH_VERSION and LIBTORCH_CUDA are
# the GPU test host's (nvcc 13.0, torch 2.11.0+cu130, Ubuntu 24.04); bump
# them together: a torch wheel is built for one CUDA major version.
ARG DEBIAN_IMAGE=debian:12
ARG CUDA_VERSION=13.0.1
ARG UBUNTU_VERSION=24.04
ARG CUDA_IMAGE=nvidia/cuda:${CUDA_VERSION}-devel-ubuntu${UBUNTU_VERSION}
ARG RUNTIME_IMAGE=nvidia/cuda:${CUDA_VERSION}-runtime-ubuntu${UBUNTU_VERSION}
ARG LIBTORCH_VERSION=2.11.0
ARG LIBTORCH_CUDA=cu130
ARG TORCH_SITE=/opt/torch/lib/python3.12/site-packages

# ---- deps: Debian 12's gRPC, protobuf, abseil, spdlog, ... as a prefix ----
FROM ${DEBIAN_IMAGE} AS deps
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src
COPY scripts/gpu-bundle.sh scripts/
# The script installs the -dev packages it gathers (ldd resolves against them).
RUN bash scripts/gpu-bundle.sh /bundle && rm -rf /var/lib/apt/lists/*

# ---- build: CUDA toolkit + pip's CUDA torch + the bundle ----
FROM ${CUDA_IMAGE} AS build
ARG LIBTORCH_VERSION
ARG LIBTORCH_CUDA
ENV DEBIAN_FRONTEND=noninteractive
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build git binutils python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
# The image build downloads torch; the project build never downloads.
RUN python3 -m venv /opt/torch \
    && /opt/torch/bin/pip install --no-cache-dir "torch==${LIBTORCH_VERSION}" \
         --index-url "https://download.pytorch.org/whl/${LIBTORCH_CUDA}"
WORKDIR /src
COPY . .
COPY --from=deps /bundle .gpu-bundle
# gpu-check.sh --build-only: unpack the bundle into /opt/dflash-deps,
# configure against torch's CMake config, build the two binaries. Their
# rpath names /opt/dflash-deps and the wheel's torch/lib, which the runtime
# stage keeps at the same paths. grep: a CPU-only torch fails here.
RUN GPU_CHECK_PY=/opt/torch/bin/python3 GPU_DEPS_DIR=/opt/dflash-deps BUILD_DIR=build \
      bash scripts/gpu-check.sh --build-only /tmp/gpu-check \
    && grep -q DFLASH_WITH_CUDA build/build.ninja \
    && mkdir -p /opt/dflash/bin \
    && cp build/server/dflash-evald build/client/dflash-eval /opt/dflash/bin/

# ---- runtime: CUDA runtime, the bundle's libraries, torch's, two binaries ----
FROM ${RUNTIME_IMAGE}
ARG TORCH_SITE
RUN groupadd --system --gid 10001 dflash \
    && useradd --system --uid 10001 --gid dflash --home /var/lib/dflash-evald \
         --shell /usr/sbin/nologin dflash \
    && mkdir -p /var/lib/dflash-evald /etc/dflash-evald \
    && chown dflash:dflash /var/lib/dflash-evald
COPY --from=build /opt/dflash-deps/usr/lib/x86_64-linux-gnu /opt/dflash-deps/usr/lib/x86_64-linux-gnu
# libtorch and the CUDA libraries it loads (cuBLAS, cuDNN, NCCL: the wheel's
# nvidia/ packages, found through torch's own $ORIGIN rpath).
COPY --from=build ${TORCH_SITE}/torch/lib ${TORCH_SITE}/torch/lib
COPY --from=build ${TORCH_SITE}/nvidia ${TORCH_SITE}/nvidia
COPY --from=build /opt/dflash/bin /usr/local/bin
COPY deploy/config.example.yaml /etc/dflash-evald/config.example.yaml
USER dflash
WORKDIR /var/lib/dflash-evald
VOLUME ["/var/lib/dflash-evald"]
EXPOSE 50051 9464
# The gRPC health service: NOT_SERVING (exit 1) until the preload finished.
HEALTHCHECK --interval=30s --timeout=5s --start-period=300s --retries=3 \
  CMD ["dflash-eval", "--server", "127.0.0.1:50051", "--timeout", "4", "health"]
# 0.0.0.0 needs --auth-token-file (or --tls-client-ca, or --insecure-allow-remote):
# without one the server refuses to start and says so (docs/security.md).
# Flags after the image name are appended (e.g. --config /etc/dflash-evald/config.yaml);
# a flag given there overrides the same key in the config file.
ENTRYPOINT ["dflash-evald", "--listen", "0.0.0.0:50051", "--state-dir", "/var/lib/dflash-evald", \
            "--data-root", "/data", "--device", "auto", "--metrics-listen", "0.0.0.0:9464"]
