#!/usr/bin/env bash
# Generates the Python gRPC stubs of blklab.v1 plus grpc.health.v1 and
# grpc.reflection.v1alpha into OUTDIR, with the system protoc and Debian's
# grpc_python_plugin (docs/architecture.md: python3-grpc-tools' bundled protoc rejects
# proto3 `optional`).
#   gen_stubs.sh OUTDIR [PROTO_ROOT]
set -euo pipefail
out=${1:?usage: gen_stubs.sh OUTDIR [PROTO_ROOT]}
root=${2:-$(cd "$(dirname "$0")/../../proto" && pwd)}
plugin=${GRPC_PYTHON_PLUGIN:-/usr/bin/grpc_python_plugin}
mkdir -p "$out"
protoc -I "$root" -I /usr/include --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" "$root"/blklab/v1/*.proto
# Health and reflection: -I on the leaf folders, or the generated grpc.*
# imports clash with the grpc package.
protoc -I /usr/share/grpc-proto/grpc/health/v1 -I /usr/share/grpc-proto/grpc/reflection/v1alpha \
  --python_out="$out" --grpc_python_out="$out" \
  --plugin=protoc-gen-grpc_python="$plugin" health.proto reflection.proto
