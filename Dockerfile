# the-loop-diagnose in a container: a static (CGO_ENABLED=0) binary on
# distroless/static, as a non-root user.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t the-loop-diagnose .
#   docker run --rm -v /srv/the-loop:/srv/the-loop -w /srv/the-loop \
#     -e GH_TOKEN the-loop-diagnose            # = run, one scan
#   docker run --rm ... the-loop-diagnose run --dry-run
#   docker run -d -p 127.0.0.1:9464:9464 ... the-loop-diagnose watch --metrics-addr :9464

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/the-loop-diagnose ./cmd/the-loop-diagnose

# distroless/static: CA certificates (for GitHub), tzdata, /etc/passwd with
# nonroot (65532), no shell. Agent CLIs (claude, codex, ...) are not in it:
# use harness builtin, openai or a command you add in an image of your own.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/the-loop-diagnose /usr/local/bin/the-loop-diagnose
USER nonroot:nonroot
WORKDIR /srv/the-loop
EXPOSE 9464
ENTRYPOINT ["/usr/local/bin/the-loop-diagnose"]
CMD ["run"]
