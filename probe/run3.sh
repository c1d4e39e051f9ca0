#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
timeout 400 python3 probe/k8_probe.py 4096x4096x4096,8192x8192x8192 "TSK=32;ASYNC=2;ASYNC=3"
ls -la $OUT
