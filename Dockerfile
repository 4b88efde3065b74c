# GPU image for dflash-evald. NOT BUILT OR RUN IN THIS PROJECT'S CI (no Docker
# engine there): treat as a starting point and verify on a GPU host.
#
#   docker build -t dflash-evald .
#   docker run --gpus all -p 50051:50051 -v /srv/dflash:/data:ro \
#     -v dflash-state:/var/lib/dflash-evald dflash-evald
#
# Build stage: CUDA toolkit + a CUDA-enabled libtorch (the pinned zip below)
# + the same libraries the Debian build uses, from the distribution.
ARG CUDA_IMAGE=nvidia/cuda:12.4.1-cudnn-devel-ubuntu22.04
ARG RUNTIME_IMAGE=nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04
ARG LIBTORCH_URL=https://download.pytorch.org/libtorch/cu124/libtorch-cxx11-abi-shared-with-deps-2.4.1%2Bcu124.zip

FROM ${CUDA_IMAGE} AS build
ARG LIBTORCH_URL
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build git curl unzip ca-certificates pkg-config \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev \
      libspdlog-dev libcli11-dev nlohmann-json3-dev libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*
RUN curl -fsSL "${LIBTORCH_URL}" -o /tmp/libtorch.zip \
    && unzip -q /tmp/libtorch.zip -d /opt && rm /tmp/libtorch.zip
WORKDIR /src
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH=/opt/libtorch -DDFLASH_BUILD_TESTS=OFF \
    && cmake --build build \
    && cmake --install build --prefix /opt/dflash

FROM ${RUNTIME_IMAGE}
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update && apt-get install -y --no-install-recommends \
      libgrpc++1 libprotobuf23 libspdlog1 libsqlite3-0 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /var/lib/dflash-evald dflash \
    && mkdir -p /var/lib/dflash-evald && chown dflash /var/lib/dflash-evald
COPY --from=build /opt/libtorch/lib /opt/libtorch/lib
COPY --from=build /opt/dflash/bin /usr/local/bin
ENV LD_LIBRARY_PATH=/opt/libtorch/lib
USER dflash
VOLUME ["/var/lib/dflash-evald"]
EXPOSE 50051
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s \
  CMD ["dflash-eval", "--server", "127.0.0.1:50051", "--timeout", "4", "health"]
ENTRYPOINT ["dflash-evald", "--listen", "0.0.0.0:50051", "--state-dir", "/var/lib/dflash-evald", \
            "--data-root", "/data", "--device", "auto"]
