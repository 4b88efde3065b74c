# GPU image for dflash-evald. NOT BUILT OR RUN IN THIS PROJECT'S CI (no Docker
# engine there; hadolint is not packaged by Debian either): the repository's
# tests only check its structure (tests/deploy/manifests_test.cc), and
# scripts/check-torch2.sh compiles the sources against libtorch 2.6 headers.
# On a GPU host, scripts/gpu-check.sh builds and checks the CUDA path.
#
#   docker build -t dflash-evald .
#   docker run --gpus all -p 50051:50051 -p 9464:9464 \
#     -v /srv/dflash:/data:ro -v dflash-state:/var/lib/dflash-evald \
#     -v "$PWD/config.yaml:/etc/dflash-evald/config.yaml:ro" dflash-evald
#
# Every pin lives here. Ubuntu 24.04's gRPC (1.51), protobuf (3.21) and
# abseil (20220623) are the versions of Debian 12, which the code is written
# and tested against. Bump CUDA_VERSION and LIBTORCH_VERSION together: the
# libtorch zip is built for one CUDA minor version (cu126 = CUDA 12.6), and
# its headers are the ones scripts/check-torch2.sh compiles against in CI
# (Debian 13's libtorch-dev 2.6).
ARG CUDA_VERSION=12.6.3
ARG UBUNTU_VERSION=24.04
ARG CUDA_IMAGE=nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu${UBUNTU_VERSION}
ARG RUNTIME_IMAGE=nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu${UBUNTU_VERSION}
ARG LIBTORCH_VERSION=2.6.0
ARG LIBTORCH_CUDA=cu126
ARG LIBTORCH_SHA256=""
# Hopper (H100/H200) and Ada/Ampere; libtorch's own kernels cover the rest.
ARG TORCH_CUDA_ARCH_LIST="8.0;8.9;9.0"

# ---- build: CUDA toolkit + CUDA libtorch + the distribution's libraries ----
FROM ${CUDA_IMAGE} AS build
ARG LIBTORCH_VERSION
ARG LIBTORCH_CUDA
ARG LIBTORCH_SHA256
ARG TORCH_CUDA_ARCH_LIST
ENV DEBIAN_FRONTEND=noninteractive TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST}
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# The same -dev packages scripts/install-deps.sh installs on Debian 12.
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build git curl unzip ca-certificates pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
      libspdlog-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev libpq-dev zlib1g-dev \
      libyaml-cpp-dev prometheus-cpp-dev libcpp-httplib-dev libgtest-dev libgmock-dev \
    && rm -rf /var/lib/apt/lists/*
# The image build downloads libtorch; the project build never downloads.
RUN curl -fsSL "https://download.pytorch.org/libtorch/${LIBTORCH_CUDA}/libtorch-cxx11-abi-shared-with-deps-${LIBTORCH_VERSION}%2B${LIBTORCH_CUDA}.zip" \
      -o /tmp/libtorch.zip \
    && if [ -n "${LIBTORCH_SHA256}" ]; then echo "${LIBTORCH_SHA256}  /tmp/libtorch.zip" | sha256sum -c -; fi \
    && unzip -q /tmp/libtorch.zip -d /opt && rm /tmp/libtorch.zip
WORKDIR /src
COPY . .
# DFLASH_WITH_CUDA comes on by itself with a CUDA libtorch (server/CMakeLists.txt).
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH=/opt/libtorch -DDFLASH_BUILD_TESTS=OFF \
    && cmake --build build \
    && cmake --install build --prefix /opt/dflash \
    && grep -q DFLASH_WITH_CUDA build/build.ninja
# The runtime packages: whatever dpkg owns among the binaries' libraries
# (libtorch's and CUDA's come from /opt/libtorch and the runtime image).
# dpkg knows the /usr/lib spelling of merged-/usr paths; a library no package
# owns fails the build here rather than the container at start.
RUN ldd /opt/dflash/bin/* | awk '/=> \// {print $3}' | grep -v -E '^(/opt/|/usr/local/cuda)' \
       | sed 's|^/lib/|/usr/lib/|' | sort -u \
       | xargs -r dpkg -S | cut -d: -f1 | sort -u \
       | grep -v -E '^(cuda-|libcudnn|libnccl|libcublas|libcusparse|libcufft|libcurand|libnvjitlink)' \
       > /opt/dflash/runtime-packages \
    && cat /opt/dflash/runtime-packages

# ---- runtime: CUDA runtime, the shared libraries, the two binaries ----
FROM ${RUNTIME_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
COPY --from=build /opt/dflash/runtime-packages /tmp/runtime-packages
RUN apt-get update && xargs -a /tmp/runtime-packages apt-get install -y --no-install-recommends \
      ca-certificates \
    && rm -rf /var/lib/apt/lists/* /tmp/runtime-packages \
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
# without one the server refuses to start and says so (docs/security.md).
# Flags after the image name are appended (e.g. --config /etc/dflash-evald/config.yaml);
# a flag given there overrides the same key in the config file.
ENTRYPOINT ["dflash-evald", "--listen", "0.0.0.0:50051", "--state-dir", "/var/lib/dflash-evald", \
            "--data-root", "/data", "--device", "auto", "--metrics-listen", "0.0.0.0:9464"]
