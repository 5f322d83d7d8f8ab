# syntax=docker/dockerfile:1

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /emq ./cmd/api

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /emq /emq
ENV EMQ_ADDR=:8080
EXPOSE 8080
USER nonroot:nonroot
ENTRYPOINT ["/emq"]
