# dcm with Debian's HAProxy, mirroring the Makefile: `make build` in the
# first stage, `make deps`'s apt packages in the second.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN make wasm GO=go \
 && CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/dcm .

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends haproxy ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /var/lib/dcm --create-home dcm
COPY --from=build /out/dcm /usr/local/bin/dcm
USER 10001
WORKDIR /var/lib/dcm
# 8080: API and metrics; 8000 and 8443: HAProxy's HTTP and HTTPS frontends. Bind beyond loopback in a pod.
EXPOSE 8080 8000 8443
ENTRYPOINT ["/usr/local/bin/dcm"]
CMD ["--work-dir=/var/lib/dcm/run", "--listen=0.0.0.0:8080", "--http-bind=0.0.0.0:8000", "--https-bind=0.0.0.0:8443"]
