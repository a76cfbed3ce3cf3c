#!/usr/bin/env bash
# One run of dolmen on a lent GPU machine (../shared/notes/gpu-machine.md): everything the
# session should bring back, in one command that fits its quarter of an hour.
#
#   scripts/gpu-run.sh --prepare     # here: the wheels into dist/gpu-wheels (dolmen's own,
#                                    # cryptography, cffi, pycparser for CPython 3.12)
#   scripts/gpu-run.sh               # there: OUT=<folder that comes back> (the run tool's $OUT)
#   scripts/gpu-run.sh --dry-run     # here: the same steps on CPU torch, tiny budgets
#
# The run installs dolmen from the wheels into a venv that sees the machine's torch
# (--system-site-packages; a --target folder where the venv module is missing), snapshots
# the host into $OUT/snapshot.tar.gz, runs `dolmen validate --level full --json`, `dolmen
# bench` (bench.json and the charts), bench/workload_overhead.py (dolmen's GEMM and copy
# against a bare torch loop, >= 0.95) and writes each step's wall time and the figures
# ($OUT/timings.tsv, $OUT/summary.txt). A step that fails is recorded with its exit code
# and the run goes on: a GPU session is not spent twice. Exit 0 when every step ran (a
# verdict of 1 or 2 is a result, not a failure of the run), 1 when a step could not.
#
# With the device tool (the checkout is copied there; the wheels are ignored files, so
# carry them): run(command="scripts/gpu-run.sh", carry=["dist/gpu-wheels"], timeout_s=580).
# Expect about 6 minutes: the full tier's 170 s of budgets, the bench's 65 s, the rest
# imports, the snapshot and the overhead pairs; the dry run here takes about 75 s.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
WHEELS=${WHEELS:-$ROOT/dist/gpu-wheels}
MODE=run
for arg in "$@"; do
  case $arg in
    --prepare) MODE=prepare ;;
    --dry-run) MODE=dry-run ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "gpu-run.sh: unknown option $arg (--prepare, --dry-run)" >&2; exit 2 ;;
  esac
done

if [ "$MODE" = prepare ]; then
  PY=${PYTHON:-$ROOT/.venv/bin/python}
  mkdir -p "$WHEELS" || exit 1
  "$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$WHEELS" "$ROOT" || exit 1
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_34_x86_64 --platform manylinux_2_28_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    -d "$WHEELS" cryptography cffi pycparser || exit 1
  ls -1 "$WHEELS"
  exit 0
fi

if [ "$MODE" = dry-run ]; then
  PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
  OUT=${OUT:-$(mktemp -d /tmp/dolmen-gpu-dry.XXXXXX)}
  DEVICE=cpu
else
  PYTHON=${PYTHON:-python3}
  OUT=${OUT:?set OUT to the folder the results go to}
  DEVICE=cuda
fi
ls "$WHEELS"/dolmen-*.whl >/dev/null 2>&1 || {
  echo "gpu-run.sh: no dolmen wheel in $WHEELS: run scripts/gpu-run.sh --prepare first" >&2
  exit 2
}
mkdir -p "$OUT" || exit 1
WORK=$(mktemp -d /tmp/dolmen-gpu-run.XXXXXX)
export DOLMEN_STATE_DIR=$WORK/state DOLMEN_CONFIG_DIR=$WORK/etc
mkdir -p "$DOLMEN_STATE_DIR" "$DOLMEN_CONFIG_DIR" "$WORK/scratch"
FAILED=0
T0=$(date +%s%N)
since() { awk -v a="$1" -v b="$(date +%s%N)" 'BEGIN { printf "%.1f", (b - a) / 1e9 }'; }
printf 'step\tseconds\texit\n' > "$OUT/timings.tsv"

step() {  # step NAME CMD...: run, time, record; stdout to $OUT/NAME.out, stderr to NAME.err
  local name=$1; shift
  local t0 rc
  t0=$(date +%s%N)
  "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"
  rc=$?
  printf '%s\t%s\t%d\n' "$name" "$(since "$t0")" "$rc" >> "$OUT/timings.tsv"
  echo "gpu-run: $name exit $rc" >&2
  return $rc
}

# 1. dolmen from the wheels, beside the machine's torch.
SITE=$WORK/venv
if "$PYTHON" -m venv --system-site-packages "$SITE" 2> "$OUT/venv.err"; then
  PY=$SITE/bin/python
  # The interpreter's own site folders (the machine's torch; in a dry run, the checkout's
  # venv) after the new venv's: its .pth files are not run, so an editable dolmen stays out.
  "$PYTHON" -c 'import site; print("\n".join(site.getsitepackages()))' \
    > "$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/zz-machine.pth"
  PIP=("$PY" -m pip install -q --no-index --no-deps)
else  # no venv module (python3-venv): a folder first on the path
  PY=$PYTHON
  export PYTHONPATH=$SITE
  PIP=("$PYTHON" -m pip install -q --no-index --no-deps --target "$SITE")
fi
"$PY" -c 'import cryptography' 2>/dev/null || "${PIP[@]}" "$WHEELS"/c*.whl "$WHEELS"/pycparser-*.whl
step install "${PIP[@]}" "$WHEELS"/dolmen-*.whl || FAILED=1
step where "$PY" -c 'import dolmen, sys, torch
print(dolmen.__file__); print(sys.version.split()[0], "torch", torch.__version__)' || FAILED=1
grep -q "^$WORK" "$OUT/where.out" || { echo "gpu-run: dolmen is not the wheel's" >&2; FAILED=1; }
DOLMEN=("$PY" -m dolmen.cli.main)

# 2. The host as dolmen reads it, and the idle sample the GEMM sampler parses.
step snapshot "${DOLMEN[@]}" snapshot -o "$OUT/snapshot.tar.gz" || FAILED=1
if [ "$DEVICE" = cuda ]; then
  step query nvidia-smi --query-gpu=index,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active \
    --format=csv,noheader,nounits --id=0 || true
fi

# 3. The full tier, then the bench (its DCGM and collective already ran, or cannot on one
# GPU), then the overhead ratios.
CONFIG=$DOLMEN_CONFIG_DIR/dolmen.toml
if [ "$DEVICE" = cpu ]; then
  printf '[workloads]\ngemm_s = 0.3\nmemory_s = 0.3\ncollective_s = 1\nstorage_s = 0.5\nscratch = ["%s"]\n' \
    "$WORK/scratch" > "$CONFIG"
  BENCH=(--device cpu --smoke)
  OVERHEAD=(--device cpu --pairs 1 --seconds 0.05)
else
  printf '[workloads]\nscratch = ["%s"]\n' "$WORK/scratch" > "$CONFIG"
  BENCH=(--device cuda --only gemm,memory,storage)
  OVERHEAD=(--device cuda --pairs 5 --seconds 0.5)
fi
step validate-full "${DOLMEN[@]}" validate --level full --device "$DEVICE" --json --config "$CONFIG"
[ "$(tail -1 "$OUT/timings.tsv" | cut -f3)" -le 2 ] || FAILED=1  # 0/1/2: a verdict
step bench "${DOLMEN[@]}" bench "${BENCH[@]}" --config "$CONFIG" --out "$OUT/bench" || FAILED=1
step overhead "$PY" "$ROOT/bench/workload_overhead.py" "${OVERHEAD[@]}" || FAILED=1

# 4. The figures, and the whole run's wall time.
TOTAL=$(since "$T0")
printf 'total\t%s\t%d\n' "$TOTAL" "$FAILED" >> "$OUT/timings.tsv"
"$PY" - "$OUT" > "$OUT/summary.txt" <<'EOF'
import json, sys
from pathlib import Path

out = Path(sys.argv[1])
steps = dict(l.split("\t")[:2] for l in (out / "timings.tsv").read_text().splitlines()[1:])
print(f"total wall {steps.get('total')} s; full tier {steps.get('validate-full')} s; "
      f"bench {steps.get('bench')} s")
try:
    doc = json.loads((out / "bench" / "bench.json").read_text())
except (OSError, ValueError) as e:
    sys.exit(print(f"no bench.json: {e}"))
for e in doc["results"].get("gemm", {}).get("gpus", []):
    peak = e["peak_tflops"]
    share = f"{e['tflops'] / peak:.3f} of {peak:g}" if peak else "no KB peak"
    clocks = e["samples"]["clock_mhz"]
    print(f"gemm {e['subject']} {e['dtype']}: {e['tflops']:.4g} TFLOP/s ({share}); "
          f"sampler {e.get('sampler') or '-'}: {len(clocks)} samples, throttled {e['throttled']}")
for g in doc["results"].get("memory", {}).get("gpus", []):
    pub = g["published_gbps"]
    share = f"{g['d2d_gbps'] / pub:.3f} of {pub:g}" if pub else "no KB figure"
    print(f"copy {g['subject']}: {g['d2d_gbps']:.1f} GB/s ({share}); h2d {g['h2d_gbps']} d2h {g['d2h_gbps']}")
for name, why in doc["errors"].items():
    print(f"not measured: {name}: {why}")
print((out / "overhead.out").read_text().strip())
EOF
cat "$OUT/summary.txt" >&2
rm -rf "$WORK"
echo "gpu-run: results in $OUT (total $(printf %.0f "$TOTAL") s)" >&2
exit $FAILED
