"""``rocm-compat matrix --emit slurm``: the matrix as one SLURM job-array script.

One file does three things, by how it is started:

- ``bash compat.sbatch`` (on a login node): submits one job array per partition (a job array has
  one partition, and each gfx lives in its own) and a merge job that waits for them all
  (``--dependency=afterany``: it runs whether tasks passed or failed, and names the ones that
  wrote no report);
- as an array task (``SLURM_ARRAY_TASK_ID`` set): builds the combination's venv once (torch from
  its index, then its packages with torch pinned again, then pytest-rocm: what nox does) and runs
  ``rocm-compat run`` with the task's label, writing the report to the shared folder;
- ``compat.sbatch merge`` (the merge job): the table of this run, the gate (``rocm-compat diff``
  against ``ROCM_COMPAT_BASELINE``'s report of the same name), and the atlas of every run so far.

Everything a site changes at submission is a variable (``ROCM_COMPAT_REPORTS``, ``_VENVS``,
``_PACKAGE``, ``_RUN_ARGS``, ``_BASELINE``); what it fixes once (account, partitions, GPUs, time)
is an option of the emitter. Stdlib only.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

from pytest_rocm._resources import VERSION
from pytest_rocm.matrix import grammar
from pytest_rocm.matrix.tasks import Plan, Task, TaskError, combination_stamp, hhmmss, package_header
from pytest_rocm.report.escape import terminal_line


@dataclass(frozen=True)
class SlurmOptions:
    reports: str = "reports"
    account: str | None = None
    #: GPUs per task, and how they are asked for: ``gres`` (``--gres=gpu:N``) or ``gpus`` (``--gpus=N``)
    gpus: int = 1
    gpu_flag: str = "gres"
    minutes: int = 90
    cpus: int = 8
    #: what each task pip-installs as pytest-rocm; None: a wheel built at submission from ``source``
    package: str | None = None
    #: the checkout this script is emitted from (``matrix.tasks.checkout_root``)
    source: str | None = None
    #: pass the node's name as ``--rocm-host-label`` (off: the report names no host)
    host_label: bool = False
    #: the partition of the merge job (None: the site's default)
    merge_partition: str | None = None


def _q(text: str) -> str:
    return shlex.quote(text)


def _comment(text: str) -> str:
    """A comment line: whatever the text holds, it stays one line (a newline would start a command)."""
    return "# " + terminal_line(text)


def _check(options: SlurmOptions) -> None:
    """What goes on ``#SBATCH`` lines (sbatch reads them itself: no shell quoting there) must be a
    plain word; the rest is quoted where it is written, but checked the same way here, for a
    caller that did not come through the command line."""
    for option, value in (("--account", options.account), ("--merge-partition", options.merge_partition)):
        if value is not None and grammar.shape_problem(value, grammar.SLURM_WORD_RE, "") is not None:
            raise TaskError(f"{option} {value!r}: expected letters, digits, '.', '_' or '-'")
    problem = grammar.text_problem(options.reports, 4096)
    if problem is not None:
        raise TaskError(f"--reports-dir {options.reports!r} {problem}")


def _gpu_request(task: Task, options: SlurmOptions) -> list[str]:
    if not task.gpus:
        return []
    return [f"--gpus={options.gpus}"] if options.gpu_flag == "gpus" else [f"--gres=gpu:{options.gpus}"]


def _groups(plan: Plan, options: SlurmOptions) -> list[tuple[list[str], list[int]]]:
    """The sbatch options of each job array (partition, GPUs) and the task indices it runs."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for task in plan.tasks:
        flags = ([f"--partition={task.partition}"] if task.partition else []) + _gpu_request(task, options)
        groups.setdefault(tuple(flags), []).append(task.index)
    return [(list(flags), indices) for flags, indices in groups.items()]


def array_spec(indices: list[int]) -> str:
    """``[0, 1, 2, 5, 7, 8]`` -> ``0-2,5,7-8``: sbatch's --array syntax (long arrays stay short)."""
    runs: list[list[int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][-1] + 1:
            runs[-1].append(index)
        else:
            runs.append([index])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _case(task: Task, options: SlurmOptions) -> str:
    c = task.combo
    fields = {
        "NAME": c.name,
        "LABEL": task.label,
        "PYTHON": f"python{c.python}",
        "TORCH": c.torch,
        "INDEX": c.index_url,
        "OVERRIDE": task.override or "",
        "REQUIRE": "--require-gpu" if task.gpus else "",
        "STAMP": combination_stamp(c),
    }
    body = "; ".join(f"{key}={_q(value)}" for key, value in fields.items())
    packages = " ".join(_q(p) for p in c.packages)
    return f"    {task.index}) {body}; PACKAGES=({packages}) ;;"


#: a task or the merge started by hand, without the submit step's wheel or ROCM_COMPAT_PACKAGE
_NEEDS_PACKAGE = '  : "${PACKAGE:?no pytest-rocm to install: submit with bash THIS_FILE, or set ROCM_COMPAT_PACKAGE}"'
#: the submit step's build of the wheel every task installs (when no --package was given)
_BUILD_WHEEL = [
    "build_wheel() {  # the pytest-rocm of the checkout this script was emitted from, as a wheel for every task",
    '  local dir="$ROCM_COMPAT_REPORTS/$ROCM_COMPAT_RUN/wheel" built',
    '  mkdir -p "$dir"',
    '  "${PYTHON:-python3}" -m pip wheel -q --no-deps --wheel-dir "$dir" "$SOURCE"',
    '  built=("$dir"/pytest_rocm-*.whl)',
    '  if [ ! -f "${built[0]}" ]; then echo "rocm-compat: no pytest-rocm wheel built from $SOURCE" >&2; exit 1; fi',
    "  PACKAGE=${built[0]}; export ROCM_COMPAT_PACKAGE=$PACKAGE",
    '  echo "rocm-compat: every task installs $PACKAGE (built from $SOURCE)"',
    "}",
    "",
]


def emit_slurm(plan: Plan, options: SlurmOptions) -> str:
    _check(options)
    last = plan.tasks[-1].index
    lines = [
        "#!/bin/bash",
        f"# The ROCm/PyTorch matrix as SLURM job arrays: `rocm-compat matrix --emit slurm` (pytest-rocm {VERSION}).",
        "# Submit from a login node:  bash THIS_FILE   (one job array per partition, then a merge job that",
        "# waits for them all with --dependency=afterany). Variables: ROCM_COMPAT_REPORTS (the shared folder),",
        "# ROCM_COMPAT_VENVS, ROCM_COMPAT_PACKAGE, ROCM_COMPAT_RUN_ARGS (more rocm-compat run / pytest",
        "# arguments), ROCM_COMPAT_BASELINE (a folder of accepted reports: the gate diffs against them).",
        *(_comment(line) for line in package_header(options.package, options.source)),
        "# Array tasks (index: combination x target -> report):",
    ]
    for task in plan.tasks:
        where = f" (partition {task.partition})" if task.partition else ""
        override = f", HSA_OVERRIDE_GFX_VERSION={task.override}" if task.override else ""
        lines.append(
            _comment(f"  {task.index}: {task.combo.name} x {task.target} -> {task.report_file}{where}{override}")
        )
    for why in plan.left_out:
        lines.append(_comment(f"  left out: {why}"))
    lines += [
        "#SBATCH --job-name=rocm-compat",
        *([f"#SBATCH --account={options.account}"] if options.account else []),
        f"#SBATCH --time={hhmmss(options.minutes)}",
        "#SBATCH --nodes=1",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={options.cpus}",
        "#SBATCH --output=rocm-compat-%A_%a.out",
        "# partition and GPUs differ per job array: given on each sbatch line below, which wins over #SBATCH",
        "set -euo pipefail",
        "",
        # a folder named like an option (-x) is ./-x: no command reads it as one
        f"REPORTS=${{ROCM_COMPAT_REPORTS:-{_q(('./' if options.reports.startswith('-') else '') + options.reports)}}}",
        'VENVS=${ROCM_COMPAT_VENVS:-"$HOME/.cache/rocm-compat/venvs"}',
        *(
            [f"PACKAGE=${{ROCM_COMPAT_PACKAGE:-{_q(options.package)}}}"]
            if options.package is not None
            else [
                f"SOURCE={_q(options.source or '')}  # the checkout the wheel is built from",
                "PACKAGE=${ROCM_COMPAT_PACKAGE:-}",
            ]
        ),
        'read -r -a RUN_ARGS <<< "${ROCM_COMPAT_RUN_ARGS:-}"',
        "",
        "task() {  # the combination of array index $1",
        '  case "$1" in',
        *(_case(task, options) for task in plan.tasks),
        f'    *) echo "rocm-compat: no array task $1 in this script (0-{last})" >&2; exit 2 ;;',
        "  esac",
        "}",
        "",
        "venv() {  # venv() DIR STAMP PIP-ARGS...: (re)built only when its stamp differs; a lock for concurrent tasks",
        "  local dir=$1 stamp=$2; shift 2",
        '  mkdir -p "$(dirname "$dir")"',
        "  (",
        "    flock 9",
        '    if [ "$(cat "$dir/.rocm-compat-stamp" 2>/dev/null)" != "$stamp" ]; then',
        '      rm -rf "$dir" && "${PYTHON:-python3}" -m venv "$dir"',
        '      "$@"',
        '      printf %s "$stamp" > "$dir/.rocm-compat-stamp"',
        "    fi",
        '  ) 9>"$dir.lock"',
        "}",
        "",
        "package_id() {  # pytest-rocm in a venv's stamp: a file's content (a wheel rebuilt at submission), else its text",
        '  if [ -f "$PACKAGE" ]; then sha256sum "$PACKAGE" | cut -d " " -f 1; else printf %s "$PACKAGE"; fi',
        "}",
        "",
        "install_combination() {",
        '  local pip=("$VENVS/$NAME/bin/python" -m pip install -q)',
        '  if [ -n "$INDEX" ]; then "${pip[@]}" "$TORCH" --index-url "$INDEX"; else "${pip[@]}" "$TORCH"; fi',
        "  # torch's requirement again: a package that wants another torch fails, never swaps the build",
        '  if [ ${#PACKAGES[@]} -gt 0 ]; then "${pip[@]}" "${PACKAGES[@]}" "$TORCH"; fi',
        '  "${pip[@]}" "$PACKAGE" pytest-xdist pytest-timeout',
        "}",
        "",
        "run_task() {",
        '  task "$1"',
        _NEEDS_PACKAGE,
        '  local out="$REPORTS/${ROCM_COMPAT_RUN:?submit with: bash THIS_FILE}"',
        '  mkdir -p "$out"',
        '  venv "$VENVS/$NAME" "$STAMP | $(package_id)" install_combination',
        "  # shellcheck disable=SC1090,SC1091  # the venv this task just built: no file to follow here",
        '  source "$VENVS/$NAME/bin/activate"',
        '  if [ -n "$OVERRIDE" ]; then export HSA_OVERRIDE_GFX_VERSION="$OVERRIDE"; fi',
        "  local extra=() status=0",
        '  if [ -n "$REQUIRE" ]; then extra+=("$REQUIRE"); fi',
        *(
            ['  extra+=(--rocm-host-label "${SLURMD_NODENAME:-$(hostname)}")  # asked for: the report names the node']
            if options.host_label
            else []
        ),
        "  # --replace: this submission's folder is this task's alone; a requeued task replaces its own attempt",
        '  rocm-compat run --label "$LABEL" --reports-dir "$out" --replace "${extra[@]}" "${RUN_ARGS[@]}" || status=$?',
        "  # 0 all passed, 1 some rows failed: both are a measurement, the report is written",
        '  if [ "$status" -gt 1 ]; then exit "$status"; fi',
        "}",
        "",
        "merge() {",
        _NEEDS_PACKAGE,
        '  local out="$REPORTS/${ROCM_COMPAT_RUN:?submit with: bash THIS_FILE}" status=0 reports=() f',
        '  PYTHON=python3 venv "$VENVS/_merge" "$(package_id)" "$VENVS/_merge/bin/python" -m pip install -q "$PACKAGE"',
        "  # shellcheck disable=SC1091  # the merge venv just built: no file to follow here",
        '  source "$VENVS/_merge/bin/activate"',
        f"  local expected=({' '.join(_q(t.report_file) for t in plan.tasks)})",
        '  for f in "${expected[@]}"; do',
        '    if [ -f "$out/$f" ]; then reports+=("$out/$f")',
        '    elif [ -f "$out/$f.partial.jsonl" ]; then reports+=("$out/$f.partial.jsonl"); echo "rocm-compat merge: $f: killed run, its sidecar is merged"',
        '    else echo "rocm-compat merge: $f: no report (see its task\'s rocm-compat-*.out)" >&2; status=1; fi',
        "  done",
        '  if [ ${#reports[@]} -eq 0 ]; then echo "rocm-compat merge: no task wrote a report" >&2; exit 1; fi',
        '  rocm-compat table "${reports[@]}" -o "$out/compat.md"',
        '  rocm-compat table "${reports[@]}" -o "$out/compat.html"',
        '  if [ -n "${ROCM_COMPAT_BASELINE:-}" ]; then',
        '    for f in "${reports[@]}"; do',
        "      local base",
        '      base="$ROCM_COMPAT_BASELINE/$(basename "${f%.partial.jsonl}")"',
        '      if [ -f "$base" ]; then rocm-compat diff "$base" "$f" || status=1',
        '      else echo "rocm-compat merge: no baseline $base: $f not gated"; fi',
        "    done",
        "  fi",
        '  rocm-compat atlas "$REPORTS" -o "$REPORTS/atlas" || status=1',
        '  echo "rocm-compat merge: $out/compat.html, atlas $REPORTS/atlas/index.html"',
        '  exit "$status"',
        "}",
        "",
        *(_BUILD_WHEEL if options.package is None else []),
        "submit() {",
        "  export ROCM_COMPAT_RUN=${ROCM_COMPAT_RUN:-$(date -u +%Y%m%dT%H%M%SZ)}",
        "  # absolute: the tasks start in the submit folder, but a site may set another with --chdir",
        '  ROCM_COMPAT_REPORTS=$(realpath -m -- "$REPORTS"); export ROCM_COMPAT_REPORTS',
        *(['  if [ -z "$PACKAGE" ]; then build_wheel; fi'] if options.package is None else []),
        "  local jobs=() id",
    ]
    for flags, indices in _groups(plan, options):
        args = " ".join(_q(arg) for arg in [f"--array={array_spec(indices)}", *flags])
        lines.append(f'  id=$(sbatch --parsable {args} "$0"); jobs+=("${{id%%;*}}")')
    merge_flags = [_q(f"--partition={options.merge_partition}")] if options.merge_partition else []
    lines += [
        '  local after; after=$(IFS=:; echo "${jobs[*]}")',
        "  # the merge needs no GPU and little time; afterany: it runs when every task ended, however",
        "  id=$(sbatch --parsable --job-name=rocm-compat-merge --time=00:30:00 --output=rocm-compat-merge-%j.out "
        + " ".join([*merge_flags, '--dependency="afterany:$after"', '"$0"', "merge"])
        + ")",
        '  echo "rocm-compat: submitted ${jobs[*]} (tasks) and ${id%%;*} (merge); reports in $REPORTS/$ROCM_COMPAT_RUN"',
        "}",
        "",
        'if [ -n "${SLURM_ARRAY_TASK_ID:-}" ]; then run_task "$SLURM_ARRAY_TASK_ID"',
        'elif [ "${1:-}" = merge ]; then merge',
        "else submit",
        "fi",
        "",
    ]
    return "\n".join(lines)
