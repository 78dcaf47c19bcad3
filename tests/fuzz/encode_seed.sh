#!/bin/sh
# encode_seed.sh PROTOC SOURCE_DIR MESSAGE IN.txtpb OUT.bin: a text-format seed to wire format.
set -e
"$1" --proto_path="$2" --encode="$3" harness/proto/faultline.proto < "$4" > "$5.tmp"
mv "$5.tmp" "$5"
