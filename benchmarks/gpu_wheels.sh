#!/usr/bin/env bash
# benchmarks/gpu_wheels.sh [DEST]: the companion of benchmarks/gpu_run.sh, on a machine that reaches
# the package index. Downloads into DEST (default .whl) the wheels of the suites' packages for the
# GPU machine, which reaches none, resolved against the torch that machine has: never torch itself,
# nor torch's own dependencies (the CUDA/ROCm libraries: they come with the torch installed there).
#
#   PYVER=3.12 TORCH=2.11.0 benchmarks/gpu_wheels.sh .whl                 # everything the suites use
#   NODEPS=1 PACKAGES=bitsandbytes PYVER=3.12 benchmarks/gpu_wheels.sh    # only what the machine lacks
#
# Settings (environment):
#   PYVER      the GPU machine's Python (default 3.12)
#   TORCH      the GPU machine's torch version, the one the packages must accept (default: this
#              machine's; a stand-in wheel of that version answers for it, so no torch is fetched)
#   PACKAGES   what to fetch (default: `gpu_run.sh --packages`), at .ci/requirements.txt's versions
#              where it pins one (PINS=0: the newest that fits)
#   NODEPS=1   fetch the named packages alone, not what they need (when the machine has the rest)
#   PLATFORMS  manylinux tags of the GPU machine (default: x86_64, glibc 2.17 to 2.28)
# It prints the exact `pip download` it runs. On the GPU machine:
#   WHEELS=.whl benchmarks/gpu_run.sh OUTDIR   (pip install --no-index --find-links .whl ...)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")
DEST=${1:-.whl}
PY=${PYTHON:-$(command -v python3 || command -v python || echo python3)}
PYVER=${PYVER:-3.12}
TORCH=${TORCH:-$("$PY" -c 'import importlib.metadata as m; print(m.version("torch"))' 2>/dev/null || true)}
[[ -n $TORCH ]] || { echo "gpu_wheels.sh: torch is not installed here: say which the GPU machine has (TORCH=2.11.0)" >&2; exit 2; }
read -r -a PLATFORMS <<<"${PLATFORMS:-manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_24_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64}"
if [[ -n ${PACKAGES:-} ]]; then
  read -r -a NAMES <<<"$PACKAGES"
else
  mapfile -t NAMES < <(bash "$HERE/gpu_run.sh" --packages)
fi

TARGET=(--only-binary=:all: --python-version "$PYVER" --implementation cp)
for platform in "${PLATFORMS[@]}"; do TARGET+=(--platform "$platform"); done

# the versions the suites were checked on (.ci/requirements.txt), unless PINS=0
REQUIREMENTS=()
for name in "${NAMES[@]}"; do
  pin=""
  if [[ ${PINS:-1} != 0 && -f $REPO/.ci/requirements.txt ]]; then
    pin=$(grep -i "^${name}==" "$REPO/.ci/requirements.txt" | head -n 1 | tr -d '[:space:]' || true)
  fi
  REQUIREMENTS+=("${pin:-$name}")
done

mkdir -p "$DEST"
if [[ ${NODEPS:-0} == 1 ]]; then
  PINNED=("${REQUIREMENTS[@]}")
else
  # Resolve without downloading: pip's dry run against a stand-in torch wheel of the GPU machine's
  # version (no dependencies), so neither torch nor its CUDA/ROCm libraries enter the resolution.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  standin="${TORCH%%+*}+standin" # a local version no index has: pip cannot pick the real torch instead
  "$PY" - "$work/links" "$standin" <<'PY'
import sys
import zipfile
from pathlib import Path

folder, version = Path(sys.argv[1]), sys.argv[2]
folder.mkdir(parents=True)
info = f"torch-{version}.dist-info"
with zipfile.ZipFile(folder / f"torch-{version}-py3-none-any.whl", "w") as wheel:
    wheel.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    wheel.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: gpu_wheels.sh\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    wheel.writestr(f"{info}/RECORD", "")
PY
  echo "torch==$standin" >"$work/torch.txt"
  echo "+ resolving ${REQUIREMENTS[*]} for Python $PYVER against torch $TORCH (pip install --dry-run --report)"
  "$PY" -m pip install --dry-run --ignore-installed --quiet --report "$work/report.json" "${TARGET[@]}" \
    --target "$work/target" --find-links "$work/links" --constraint "$work/torch.txt" "${REQUIREMENTS[@]}"
  mapfile -t PINNED < <("$PY" - "$work/report.json" <<'PY'
import json
import sys

for item in json.load(open(sys.argv[1], encoding="utf-8"))["install"]:
    name, version = item["metadata"]["name"], item["metadata"]["version"]
    if name.lower() != "torch":
        print(f"{name}=={version}")
PY
  )
fi

command=("$PY" -m pip download --no-deps "${TARGET[@]}" -d "$DEST" "${PINNED[@]}")
printf '+ '
printf '%q ' "${command[@]}" | sed 's/ $//'
echo
"${command[@]}"
echo "gpu_wheels.sh: $(find "$DEST" -name '*.whl' | wc -l) wheels, $(du -sh "$DEST" | cut -f1) in $DEST"
echo "on the GPU machine: WHEELS=$DEST bash benchmarks/gpu_run.sh OUTDIR"
