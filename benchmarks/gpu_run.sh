#!/usr/bin/env bash
# benchmarks/gpu_run.sh OUTDIR [--dry-run] [--tiny] [--only SUITE[,SUITE]] [-- PYTEST_ARGS...]
#
# The GPU run as one prepared command (docs/gpu.md): on a machine with a GPU and no package index
#   (a) installs the suites' missing packages from a folder of wheels made beforehand by
#       benchmarks/gpu_wheels.sh (WHEELS, default .whl); never torch, never a package already there;
#   (b) records the environment: OUTDIR/env.txt, env.json, doctor.txt, doctor.json, pip-list.txt;
#   (c) runs every bundled suite (each folder of the suites with test files: operators, libraries,
#       models, and any other) through `rocm-compat run`, in the `full` scale profile
#       (PYTEST_ROCM_SCALE), each under its own wall-clock limit: OUTDIR/<suite>/ holds its report
#       (<label>.json, or <label>.partial.jsonl when the limit or a crash cut it short) and log.txt;
#       then the device profile as a step of its own, `device` (the boundary rows at sizes a CPU
#       cannot afford: operators/test_boundary_device.py, serial, each row a few GiB), which the
#       operators step leaves out;
#   (d) merges the suites into one report, OUTDIR/report.json (one column of the published table),
#       and renders it with `rocm-compat table` as OUTDIR/table.md and OUTDIR/table.html;
#   (e) logs everything to OUTDIR/run.log and writes OUTDIR/summary.md and summary.json (per suite:
#       outcome counts, seconds, limit, whether it hit the limit).
# A suite that hits its limit or crashes costs only its own unfinished tests.
#
#   --dry-run   print the plan (every command, the files it writes) and run nothing
#   --tiny      the whole script on a CPU in seconds: ci profile, a -k filter per suite, no xdist
#   --only S    only these suites (comma-separated)
#   --packages  print the suites' packages (for benchmarks/gpu_wheels.sh) and exit
#   -- ARGS     more pytest arguments for every suite
#
# Settings (environment): WHEELS (.whl), PYTHON (python3), GPU_RUN_LABEL (the column label;
# default rocm-compat's: backend, torch, ROCm/CUDA, device), GPU_RUN_SCALE (full; --tiny: ci),
# GPU_RUN_WORKERS (xdist workers, 8; --tiny: 0), GPU_RUN_TEST_TIMEOUT (seconds per test, 60,
# at most half the suite's limit),
# GPU_RUN_LIMIT_<SUITE> (seconds for one suite: OPERATORS 150, LIBRARIES 120, MODELS 120, DEVICE 480),
# GPU_RUN_DEVICE_TEST_TIMEOUT (seconds per device-profile row, 240, at most half the step's limit),
# GPU_RUN_LIMIT (any other suite, 45), GPU_RUN_BUDGET (seconds for all suites: scales the defaults),
# GPU_RUN_TINY_K_<SUITE> (--tiny's -k for a suite), GPU_RUN_COMPARE (reports to put beside this
# run's column in the table), GPU_RUN_EXTRA_PACKAGES (more packages to install, e.g. xformers),
# GPU_RUN_SUITES (the suites root; default the bundled suites).
#
# Exit status: 0 every suite left a report and the table was written (failing tests are data: see
# the summary), 1 a suite left no usable report or the merge/table failed, 2 bad usage.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(dirname "$HERE")

#: what the suites import besides torch (never installed by this script: install your platform's
#: build first) and pytest-rocm itself (run from this checkout); missing ones come from WHEELS
SUITE_PACKAGES=(pytest pytest-xdist pytest-timeout packaging numpy safetensors transformers accelerate peft bitsandbytes)
read -r -a EXTRA_PACKAGES <<<"${GPU_RUN_EXTRA_PACKAGES:-}"
PACKAGES=("${SUITE_PACKAGES[@]}" "${EXTRA_PACKAGES[@]}")
#: the suites this script knows first, in the table's order; any other suite folder runs after them
KNOWN_SUITES=(operators libraries models)

usage() {
  sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
}

die_usage() {
  echo "gpu_run.sh: $*" >&2
  echo "usage: gpu_run.sh OUTDIR [--dry-run] [--tiny] [--only SUITE[,SUITE]] [-- PYTEST_ARGS...] (--help)" >&2
  exit 2
}

OUTDIR="" DRY=0 TINY=0 ONLY="" PYTEST_EXTRA=()
while (($#)); do
  case $1 in
    --dry-run) DRY=1 ;;
    --tiny) TINY=1 ;;
    --only) (($# > 1)) || die_usage "--only needs a suite list"; ONLY=$2; shift ;;
    --only=*) ONLY=${1#*=} ;;
    --packages) printf '%s\n' "${PACKAGES[@]}"; exit 0 ;;
    -h | --help) usage; exit 0 ;;
    --) shift; PYTEST_EXTRA=("$@"); break ;;
    -*) die_usage "unknown option $1" ;;
    *) [[ -z $OUTDIR ]] || die_usage "one OUTDIR only (got $OUTDIR and $1)"; OUTDIR=$1 ;;
  esac
  shift
done
[[ -n $OUTDIR ]] || die_usage "OUTDIR is required"

PY=${PYTHON:-$(command -v python3 || command -v python || echo python3)}
WHEELS=${WHEELS:-.whl}
if ((TINY)); then
  SCALE=${GPU_RUN_SCALE:-ci} WORKERS=${GPU_RUN_WORKERS:-0}
else
  SCALE=${GPU_RUN_SCALE:-full} WORKERS=${GPU_RUN_WORKERS:-8}
fi
TEST_TIMEOUT=${GPU_RUN_TEST_TIMEOUT:-60}
LABEL=${GPU_RUN_LABEL:-}
read -r -a COMPARE <<<"${GPU_RUN_COMPARE:-}"

# pytest-rocm from this checkout, whatever is installed: a fix made during a GPU session is what
# the next try runs. Without an installed entry point, pytest loads the plugin by name.
export PYTHONPATH="$REPO${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
# the suites build their models from configs; on a machine without network a stray download must
# fail at once instead of waiting for a connection
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1} HF_HUB_DISABLE_TELEMETRY=1

quote() { printf '%q ' "$@" | sed 's/ $//'; }
var_suffix() { tr '[:lower:]' '[:upper:]' <<<"$1" | tr -c 'A-Z0-9\n' '_'; }

# -- suites: every folder of the suites root with test files ------------------------------------
SUITES_ROOT=$("$PY" -c 'from pytest_rocm._resources import bundled_suites; print(bundled_suites())' 2>/dev/null) ||
  SUITES_ROOT="$REPO/suites"
SUITES_ROOT=${GPU_RUN_SUITES:-$SUITES_ROOT}
[[ -d $SUITES_ROOT ]] || { echo "gpu_run.sh: $SUITES_ROOT: no suites folder" >&2; exit 2; }

has_tests() { compgen -G "$1/test_*.py" >/dev/null || compgen -G "$1/*/test_*.py" >/dev/null; }
discover() {
  local found=() name dir
  for name in "${KNOWN_SUITES[@]}"; do
    [[ -d $SUITES_ROOT/$name ]] && has_tests "$SUITES_ROOT/$name" && found+=("$name")
  done
  for dir in "$SUITES_ROOT"/*/; do
    name=$(basename "$dir")
    [[ $name == _* || $name == .* || " ${KNOWN_SUITES[*]} " == *" $name "* ]] && continue
    has_tests "$dir" && found+=("$name")
  done
  # the device profile: a step of its own after the suites (its rows are the operators suite's)
  if [[ " ${found[*]} " == *" operators "* && -f $SUITES_ROOT/operators/test_boundary_device.py ]]; then
    found+=(device)
  fi
  if ((${#found[@]})); then printf '%s\n' "${found[@]}"; fi
}
mapfile -t SUITES < <(discover)
if [[ -n $ONLY ]]; then
  IFS=, read -r -a WANTED <<<"$ONLY"
  for name in "${WANTED[@]}"; do
    [[ " ${SUITES[*]} " == *" $name "* ]] || die_usage "--only: no suite $name under $SUITES_ROOT (there: ${SUITES[*]})"
  done
  SUITES=("${WANTED[@]}")
fi
((${#SUITES[@]})) || { echo "gpu_run.sh: no suite with test files under $SUITES_ROOT" >&2; exit 2; }

# -- per-suite wall-clock limits (defaults add up to about 8 minutes with two further suites) ------
default_limit() {
  if ((TINY)); then echo 60; return; fi
  case $1 in
    operators) echo 150 ;;
    libraries | models) echo 120 ;;
    device) echo 480 ;;
    *) echo "${GPU_RUN_LIMIT:-45}" ;;
  esac
}
declare -A LIMIT
total=0
for suite in "${SUITES[@]}"; do
  LIMIT[$suite]=$(default_limit "$suite")
  total=$((total + LIMIT[$suite]))
done
if [[ -n ${GPU_RUN_BUDGET:-} ]]; then # one knob for a shorter second try: the shares stay
  for suite in "${SUITES[@]}"; do
    LIMIT[$suite]=$(((LIMIT[$suite] * GPU_RUN_BUDGET + total / 2) / total))
    ((LIMIT[$suite] >= 10)) || LIMIT[$suite]=10
  done
fi
for suite in "${SUITES[@]}"; do
  var="GPU_RUN_LIMIT_$(var_suffix "$suite")"
  [[ -n ${!var:-} ]] && LIMIT[$suite]=${!var}
done

# -- --tiny: a handful of rows per suite ------------------------------------------------------------
tiny_filter() {
  local var
  var="GPU_RUN_TINY_K_$(var_suffix "$1")"
  if [[ -n ${!var:-} ]]; then echo "${!var}"; return; fi
  case $1 in
    operators) echo "test_activation and gelu and float32 or test_sdpa and not sweep and math and float32" ;;
    libraries) echo "test_vector_add and float32 or test_flash_attn_func and mha-full-64-float16" ;;
    models) echo "test_cnn_training and test_checkpoint or test_multi_gpu" ;;
    distributed) echo "test_collective and all_reduce" ;;
    known_issues) echo "sort-bool-view or topk-nondeterministic-half-float16" ;;
    corpus) echo "matmul-default and s0 or nn.BatchNorm1d-train and s0" ;;
    device) echo "test_boundary_device" ;; # ci: its one row, which says where the device rows are
    *) # a suite this script does not know: its first test module
      local first
      first=$(cd "$SUITES_ROOT/$1" && find . -name 'test_*.py' | LC_ALL=C sort | head -n 1)
      basename "$first" .py ;;
  esac
}

suite_command() { # the command line of one suite, in SUITE_CMD
  local suite=$1
  # one hung test may take half of the suite's time at most: the rest still runs. The rows of
  # known_issues and distributed carry their own timeout markers (up to 600 s), which win over
  # --timeout: their variables cap those markers (and the watchdogs under them) to the same limit
  local wanted=$TEST_TIMEOUT folder=$suite workers=$WORKERS
  if [[ $suite == device ]]; then # serial: two rows of a few GiB each at once may not fit
    wanted=${GPU_RUN_DEVICE_TEST_TIMEOUT:-240} folder=operators workers=0
  fi
  local per_test=$((LIMIT[$suite] / 2 < wanted ? LIMIT[$suite] / 2 : wanted))
  ((per_test >= 10)) || per_test=10
  SUITE_CMD=(env "PYTEST_ROCM_KNOWN_ISSUES_TIMEOUT=$per_test" "PYTEST_ROCM_DIST_TIMEOUT=$per_test")
  SUITE_CMD+=("$PY" -m pytest_rocm.cli run --suites "$SUITES_ROOT/$folder" --reports-dir "$OUTDIR/$suite")
  [[ -n $LABEL ]] && SUITE_CMD+=(--label "$LABEL")
  # OUTDIR is this script's: a run again into it replaces all of it (env, logs, merged report),
  # the suites' reports too, never a half of old and new
  SUITE_CMD+=(--replace)
  # --rootdir the suites root (the last --rootdir wins): node ids keep the suite's folder, so the
  # features are operators/..., as in a run of all suites, and the table merges them
  SUITE_CMD+=(-- --rootdir "$SUITES_ROOT" -n "$workers" --timeout "$per_test" -q)
  if [[ -f $SUITES_ROOT/pytest.ini && ! -f $SUITES_ROOT/$suite/pytest.ini ]]; then
    SUITE_CMD+=(-c "$SUITES_ROOT/pytest.ini")
  fi
  if ((TINY)); then
    SUITE_CMD+=(-k "$(tiny_filter "$suite")")
  elif [[ $suite == device ]]; then
    # the suite's other test files are not even collected: the full boundary arrays alone take a
    # minute or two to build, for rows this step would deselect
    local other
    for other in "$SUITES_ROOT"/operators/test_*.py; do
      [[ $(basename "$other") == test_boundary_device.py ]] || SUITE_CMD+=("--ignore=$other")
    done
    SUITE_CMD+=(-k test_boundary_device)
  elif [[ $suite == operators && -f $SUITES_ROOT/operators/test_boundary_device.py ]]; then
    SUITE_CMD+=(-k "not test_boundary_device")
  fi
  SUITE_CMD+=("${PYTEST_EXTRA[@]}")
  return 0
}

# -- helpers ---------------------------------------------------------------------------------------
RC=0
run_logged() { # run_logged LIMIT FILE CMD...: under a time limit, output to the log and FILE; RC
  local limit=$1 file=$2
  shift 2
  echo "+ timeout $limit $(quote "$@") > ${file#"$OUTDIR"/}"
  RC=0
  ((DRY)) && return 0
  timeout -k 15 "$limit" "$@" </dev/null 2>&1 | tee "$file" || RC=${PIPESTATUS[0]}
}
run_quiet() { # run_quiet LIMIT FILE CMD...: output to FILE only; RC
  local limit=$1 file=$2
  shift 2
  echo "+ timeout $limit $(quote "$@") > ${file#"$OUTDIR"/}"
  RC=0
  ((DRY)) && return 0
  timeout -k 15 "$limit" "$@" </dev/null >"$file" 2>&1 || RC=$?
}
section() { printf '\n== %s ==\n' "$*"; }
now() { date +%s.%N; }

# -- (a) install ---------------------------------------------------------------------------------
install_packages() {
  section "install the suites' packages from $WHEELS (never torch)"
  local missing=()
  mapfile -t missing < <("$PY" - "${PACKAGES[@]}" <<'PY'
import importlib.metadata as metadata
import sys

for name in sys.argv[1:]:
    try:
        metadata.version(name)
    except metadata.PackageNotFoundError:
        print(name)
PY
  )
  if ((${#missing[@]} == 0)); then
    echo "all installed: ${PACKAGES[*]}"
    return 0
  fi
  echo "missing: ${missing[*]}"
  if [[ ! -d $WHEELS ]]; then
    echo "no wheels folder at $WHEELS (make one with benchmarks/gpu_wheels.sh): going on with what is installed;"
    echo "the suites record what is missing as not-installed"
    return 0
  fi
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    echo "$PY has no pip: going on with what is installed"
    return 0
  fi
  # every installed distribution pinned (torch above all): a wheel that wants another version of
  # something already here fails to install instead of replacing it; no torch here: none may come
  local constraints="$OUTDIR/constraints.txt"
  echo "+ $(quote "$PY" -m pip list --format=freeze --exclude-editable) > constraints.txt"
  if ((!DRY)); then
    "$PY" -m pip list --format=freeze --exclude-editable 2>/dev/null | grep '==' >"$constraints" || true
    grep -qi '^torch==' "$constraints" || echo 'torch<0' >>"$constraints"
  fi
  local name
  for name in "${missing[@]}"; do
    run_logged 180 "$OUTDIR/install-$name.log" "$PY" -m pip install --no-index --find-links "$WHEELS" \
      --constraint "$constraints" --no-cache-dir --progress-bar off "$name"
    ((RC == 0)) || echo "could not install $name from $WHEELS (exit $RC): going on without it"
  done
}

# -- (b) environment -------------------------------------------------------------------------------
record_environment() {
  section "environment"
  local cli=("$PY" -m pytest_rocm.cli)
  run_quiet 120 "$OUTDIR/env-detect.log" "${cli[@]}" env --json -o "$OUTDIR/env.json"
  run_logged 60 "$OUTDIR/env.txt" "${cli[@]}" env --env "$OUTDIR/env.json"
  section "doctor"
  run_logged 120 "$OUTDIR/doctor.txt" "${cli[@]}" doctor
  run_quiet 60 "$OUTDIR/doctor.json" "${cli[@]}" doctor --json --env "$OUTDIR/env.json"
  run_quiet 60 "$OUTDIR/pip-list.txt" "$PY" -m pip list
  local smi
  for smi in nvidia-smi rocm-smi; do
    if command -v "$smi" >/dev/null 2>&1; then
      run_logged 30 "$OUTDIR/$smi.txt" "$smi"
    fi
  done
  if ((!DRY)); then
    if "$PY" -c 'import pytest_rocm.plugin.scale' 2>/dev/null; then
      echo "scale profile: $SCALE (PYTEST_ROCM_SCALE)"
    else
      echo "this pytest-rocm has no scale profile: PYTEST_ROCM_SCALE=$SCALE is ignored (one size)"
    fi
  fi
}

plugin_loading() { # pytest finds the plugin through its entry point, else PYTEST_PLUGINS names it
  if "$PY" - <<'PY' 2>/dev/null; then
import importlib.metadata as metadata
import sys

points = [e for e in metadata.entry_points(group="pytest11") if e.value.split(":")[0] == "pytest_rocm.plugin"]
sys.exit(0 if points else 1)
PY
    echo "pytest plugin: the installed entry point, code from $REPO (PYTHONPATH)"
  else
    export PYTEST_PLUGINS=pytest_rocm.plugin
    echo "pytest plugin: pytest-rocm is not installed: PYTEST_PLUGINS=pytest_rocm.plugin from $REPO"
  fi
}

# -- (c) the suites -----------------------------------------------------------------------------
run_suites() {
  local suite start rc seconds
  export PYTEST_ROCM_SCALE=$SCALE # the variable, not --rocm-scale: a pytest-rocm without it ignores it
  : >"$OUTDIR/suites.tsv"
  for suite in "${SUITES[@]}"; do
    section "suite $suite (limit ${LIMIT[$suite]} s, scale $SCALE)"
    suite_command "$suite"
    mkdir -p "$OUTDIR/$suite"
    rm -f "$OUTDIR/$suite"/*.json "$OUTDIR/$suite"/*.partial.jsonl "$OUTDIR/$suite"/*.md "$OUTDIR/$suite"/*.html
    start=$(now)
    run_logged "${LIMIT[$suite]}" "$OUTDIR/$suite/log.txt" "${SUITE_CMD[@]}"
    rc=$RC
    seconds=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
    case $rc in
      124 | 137) echo "gpu_run.sh: suite $suite hit its limit of ${LIMIT[$suite]} s: its finished tests are kept" ;;
      0 | 1) ;;
      *) echo "gpu_run.sh: suite $suite ended with exit $rc" ;;
    esac
    printf '%s\t%s\t%s\t%s\n' "$suite" "$rc" "$seconds" "${LIMIT[$suite]}" >>"$OUTDIR/suites.tsv"
  done
}

# -- (d) + (e) merge, table, summary --------------------------------------------------------------
merge_reports() {
  section "merge the suites into report.json; summary"
  echo "+ $(quote "$PY") - $(quote "$OUTDIR") < merge  (report.json, summary.md, summary.json)"
  ((DRY)) && return 0
  "$PY" - "$OUTDIR" "$SCALE" "$TINY" <<'PY'
import json
import os
import sys
from pathlib import Path

from pytest_rocm.report.load import ReportError, load_report
from pytest_rocm.report.records import assemble

try:
    from pytest_rocm.table.model import environment_line
except ImportError:  # the one-line environment is a nicety

    def environment_line(env):
        return ", ".join(str(env[k]) for k in ("backend", "torch", "rocm", "cuda") if env.get(k))


def write_json(path, document):  # atomically, strict JSON, as the report writer does
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, indent=1, allow_nan=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


out, scale, tiny = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
rows, documents = [], []
for line in (out / "suites.tsv").read_text().splitlines():
    suite, rc, seconds, limit = line.split("\t")
    rc = int(rc)
    folder = out / suite
    candidates = sorted(folder.glob("*.json")) or sorted(folder.glob("*.partial.jsonl"))
    row = {"suite": suite, "exit": rc, "seconds": float(seconds), "limit": int(limit), "hit_limit": rc in (124, 137)}
    if not candidates:
        row.update(report=None, error=f"{folder}: no report written")
    else:
        try:
            document = load_report(candidates[0])
        except ReportError as exc:
            row.update(report=str(candidates[0].relative_to(out)), error=str(exc))
        else:
            documents.append(document)
            counts = {k: v for k, v in document["summary"].items() if v and k != "total"}
            row.update(report=str(candidates[0].relative_to(out)), total=document["summary"]["total"], counts=counts)
            row["interrupted"] = bool(document.get("interrupted"))
    not_passed = sum(row.get("counts", {}).get(k, 0) for k in ("failed", "error", "crashed", "timeout", "xpassed"))
    if row["hit_limit"]:
        row["status"] = f"hit its limit ({limit} s): finished tests kept"
    elif row.get("error"):
        row["status"] = f"NO USABLE REPORT (exit {rc}): see {suite}/log.txt"
    elif rc == 0:
        row["status"] = "ok"
    elif rc == 1 and not_passed:
        row["status"] = "ok: some tests did not pass"
    else:  # a crash of pytest or of rocm-compat itself, a usage error, no test selected
        row["status"] = f"exit {rc}" + (": partial report" if row.get("interrupted") else "") + f", see {suite}/log.txt"
    rows.append(row)

summary = {"scale": scale, "tiny": tiny, "suites": rows, "report": None, "label": None}
if documents:
    first = documents[0]
    labels = sorted({d["label"] for d in documents})
    if len(labels) > 1:
        print(f"gpu_run.sh: the suites have different labels {labels}: report.json takes {first['label']!r}")
    extra = {"device": first.get("device"), "scale": first.get("scale") or scale}
    if any(d.get("interrupted") for d in documents) or any(r["hit_limit"] or r.get("error") for r in rows):
        extra["interrupted"] = True  # the table marks the column as partial
    results = [record for d in documents for record in d["results"]]
    merged = assemble(first["label"], first.get("environment") or {}, results, first.get("created"), **extra)
    write_json(out / "report.json", merged)
    summary.update(report="report.json", label=first["label"], environment=environment_line(first.get("environment") or {}))
    summary["totals"] = {k: v for k, v in merged["summary"].items() if v}

(out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
lines = [f"# GPU run: {summary['label'] or '(no report)'} (scale {scale}{', tiny' if tiny else ''})", ""]
if summary.get("environment"):
    lines += [summary["environment"], ""]
lines += ["| suite | results | seconds | limit | status | report |", "| --- | --- | --- | --- | --- | --- |"]
for r in rows:
    counts = ", ".join(f"{n} {k}" for k, n in r.get("counts", {}).items()) or r.get("error", "none")
    lines.append(f"| {r['suite']} | {counts} | {r['seconds']:.1f} | {r['limit']} s | {r['status']} | {r['report'] or '-'} |")
if summary["report"]:
    totals = ", ".join(f"{n} {k}" for k, n in summary["totals"].items() if k != "total")
    lines += ["", f"all suites: {summary['totals'].get('total', 0)} results ({totals}) in report.json; table.md, table.html"]
(out / "summary.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
sys.exit(0 if summary["report"] and not any(r.get("error") for r in rows) else 1)
PY
}

write_table() {
  section "table"
  local fmt
  for fmt in md html; do
    run_logged 120 "$OUTDIR/table-$fmt.log" "$PY" -m pytest_rocm.cli table "$OUTDIR/report.json" "${COMPARE[@]}" \
      -o "$OUTDIR/table.$fmt"
    ((RC == 0)) || return 1
  done
}

main() {
  echo "gpu_run.sh: $(date -u +%Y-%m-%dT%H:%M:%SZ) $(hostname 2>/dev/null || true)"
  echo "outdir $OUTDIR; suites ${SUITES[*]} (from $SUITES_ROOT); scale $SCALE; workers $WORKERS;" \
    "per test ${TEST_TIMEOUT} s; limits $(for s in "${SUITES[@]}"; do printf '%s=%ss ' "$s" "${LIMIT[$s]}"; done)"
  ((TINY)) && echo "tiny: a -k filter per suite, on this machine's device"
  if ((DRY)); then
    echo "dry run: the plan; writes OUTDIR/run.log, env.txt, env.json, doctor.txt, doctor.json, pip-list.txt," \
      "<suite>/ (report and log.txt) for each of ${SUITES[*]}, report.json, table.md, table.html," \
      "summary.md, summary.json"
  fi
  install_packages
  record_environment
  ((DRY)) || plugin_loading
  run_suites_or_plan
  local status=0
  merge_reports || status=1
  if ((DRY)) || [[ -f $OUTDIR/report.json ]]; then
    write_table || status=1
  fi
  if ((!DRY)); then
    section "summary"
    cat "$OUTDIR/summary.md" 2>/dev/null || echo "gpu_run.sh: no summary (the merge failed: see above)"
    echo
    echo "send back: $OUTDIR/report.json (one column: rocm-compat table report.json ...); all of $OUTDIR for the logs"
  fi
  return "$status"
}

run_suites_or_plan() {
  if ((DRY)); then
    local suite
    for suite in "${SUITES[@]}"; do
      section "suite $suite (limit ${LIMIT[$suite]} s, scale $SCALE)"
      suite_command "$suite"
      echo "+ PYTEST_ROCM_SCALE=$SCALE timeout ${LIMIT[$suite]} $(quote "${SUITE_CMD[@]}") > $suite/log.txt"
    done
  else
    run_suites
  fi
}

if ((DRY)); then
  main
  exit $?
fi
command -v timeout >/dev/null 2>&1 || { echo "gpu_run.sh: needs timeout (GNU coreutils)" >&2; exit 2; }
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
# the exit status is main's (pipefail): tee only copies everything into run.log
main 2>&1 | tee "$OUTDIR/run.log"
