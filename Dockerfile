# gpuwatch in a container, for the NVIDIA container toolkit: the driver and
# NVML come from the host at run time, nothing of them is in the image.
#
#   docker build -t gpuwatch .
#   docker run -d --name gpuwatch --gpus all --pid=host --network=host \
#     -v gpuwatch-state:/var/lib/gpuwatch gpuwatch
#
# --pid=host shows the container the host's processes, so the PIDs NVML
# reports can be attributed to users and containers; --network=host lets
# the default config's 127.0.0.1:9477 (the API, /metrics) be the host's.
# Mount a config of your own at /etc/gpuwatch (a folder holding
# config.yaml). The image runs as the unprivileged user gpuwatch, which
# reads other users' /proc/PID/status, cmdline and cgroup on an ordinary
# /proc; on a host whose /proc is mounted with hidepid, add
# `--user 0 --cap-drop ALL --cap-add SYS_PTRACE`.

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so a change of the code alone reuses this layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
ARG COMMIT=""
ARG DATE=""
# go-nvml is cgo (it dlopens libnvidia-ml.so.1 at run time): gcc comes with
# the golang image.
RUN CGO_ENABLED=1 CGO_CFLAGS="-O2 -Wno-deprecated-declarations" go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/gpuwatch/gpuwatch/cli.Version=${VERSION} -X github.com/gpuwatch/gpuwatch/cli.Commit=${COMMIT} -X github.com/gpuwatch/gpuwatch/cli.Date=${DATE}" \
      -o /out/gpuwatch ./cmd/gpuwatch \
 && /out/gpuwatch check --config config.example.yaml

# glibc for cgo and ldconfig for the toolkit, which adds the host's driver
# libraries to the image's library cache when the container starts.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --user-group --no-create-home --home-dir /var/lib/gpuwatch --shell /usr/sbin/nologin gpuwatch \
 && mkdir -p /etc/gpuwatch /var/lib/gpuwatch \
 && chown gpuwatch:gpuwatch /var/lib/gpuwatch \
 && chmod 0750 /var/lib/gpuwatch
COPY --from=build /out/gpuwatch /usr/bin/gpuwatch
COPY --from=build /src/config.example.yaml /etc/gpuwatch/config.yaml
# The toolkit mounts the GPUs and, with "utility", NVML and nvidia-smi; the
# image needs no compute libraries.
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility
VOLUME ["/etc/gpuwatch", "/var/lib/gpuwatch"]
USER gpuwatch
EXPOSE 9477
ENTRYPOINT ["/usr/bin/gpuwatch"]
CMD ["run", "--config", "/etc/gpuwatch/config.yaml"]
