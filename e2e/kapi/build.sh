#!/usr/bin/env bash
# Builds the test control plane to <repo>/.cache/kapi. The Makefile (make
# kapi) and the tests (kapitest.Binary) both call this, so they build the
# same binary and the second build is a no-op. The version ldflags make
# /version report the release instead of v0.0.0-master.
set -euo pipefail
cd "$(dirname "$0")"
out=../../.cache/kapi
go build -ldflags "-X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" -o "$out" .
echo "$(cd "$(dirname "$out")" && pwd)/kapi"
