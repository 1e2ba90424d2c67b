#!/usr/bin/env bash
# make test-cores: the whole doctest suite again, on BLAS cores and row kernels
# other than the ones this machine picks for itself, so that a test whose
# exact equality held only by the accident of one core's summation order fails
# here and not on a newcomer's CPU (docs/BUILDING.md, "Tests on every CPU").
#
#   generic   OPENBLAS_CORETYPE=Prescott TINYFORMER_KERNELS=baseline
#             the SSE2 sgemm every x86-64 runs, and the engine's baseline
#             x86-64 row kernels: a CPU with nothing newer
#   avx2      OPENBLAS_CORETYPE=Haswell  TINYFORMER_KERNELS=avx2
#             the AVX2+FMA sgemm and row kernels: a CPU without AVX-512
#             (an AMD Zen 3, an older Intel); only where the CPU runs AVX2+FMA
#
# Each run prints doctest's summary line; the script exits non-zero when any
# run fails. Usage: tests/run_cores.sh [TEST_BINARY] (default build/tinyformer-tests)
# with any doctest options after it.
set -uo pipefail
cd "$(dirname "$0")/.."

binary=${1:-build/tinyformer-tests}
shift $(( $# > 0 ? 1 : 0 ))
if [ ! -x "$binary" ]; then
  echo "test-cores: $binary: no such program (make build/tinyformer-tests)" >&2
  exit 2
fi

# What the machine would choose by itself, for the record.
./build/tinyformer version 2>/dev/null | grep -E '^  (BLAS |CPU |core in use|kernels)' | cut -c1-120

has_flags() {
  local flags
  flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
  for f in "$@"; do
    [[ " $flags " == *" $f "* ]] || return 1
  done
}

status=0
run() {
  local name=$1 core=$2 kernels=$3
  shift 3
  echo "== test-cores: $name: OPENBLAS_CORETYPE=$core TINYFORMER_KERNELS=$kernels =="
  local start=$SECONDS
  OPENBLAS_CORETYPE=$core TINYFORMER_KERNELS=$kernels "$binary" "$@"
  local rc=$?
  echo "== test-cores: $name: exit $rc in $((SECONDS - start)) s =="
  if [ "$rc" -ne 0 ]; then status=1; fi
}

run generic Prescott baseline "$@"
if has_flags avx2 fma; then
  run avx2 Haswell avx2 "$@"
else
  echo "== test-cores: avx2: skipped, this CPU has no AVX2+FMA =="
fi
exit $status
