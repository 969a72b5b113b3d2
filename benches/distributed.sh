#!/usr/bin/env bash
# skiff::distributed's benchmark (issue 19): all_reduce bandwidth and the CNN
# step, as one rank and as two, alternating, on loopback TCP between the
# ranks (as between machines; Open MPI's shared-memory transport would be
# faster on one machine). Needs Open MPI (openmpi-bin, libopenmpi-dev).
#   bash benches/distributed.sh [rounds] [--device cpu|gpu]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
shift || true
cargo build --release --features distributed --example dist_bench
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for round in $(seq "$rounds"); do
  for np in 1 2; do
    echo "== round $round, $np rank(s)"
    mpirun -np "$np" --oversubscribe --mca btl self,tcp --mca btl_tcp_if_include lo \
      --mca oob_tcp_if_include lo target/release/examples/dist_bench "$@"
  done
done
