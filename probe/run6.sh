#!/usr/bin/env bash
set -uo pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
exec > >(tee "$OUT/log.txt") 2>&1
timeout 60 python3 probe/scan_ab.py
timeout 300 python3 probe/k8_probe.py 4096x4096x4096,8192x8192x8192 "src=probe/k8.cl;src=probe/k8rs.cl"
