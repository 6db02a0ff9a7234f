"""``rocm-compat matrix --emit k8s``: the matrix as Kubernetes Jobs (YAML).

- one **Indexed Job** (``completionMode: Indexed``) per gfx target and Python: a pod template has
  one node selection and one image, so a Job holds the combinations that share them, one
  completion index each (``JOB_COMPLETION_INDEX`` picks the task);
- each pod asks for ``resources.limits["amd.com/gpu"]`` (``nvidia.com/gpu`` for CUDA combinations,
  none for CPU ones) and lands on a node of its gfx by the labels AMD's node labeller publishes:
  ``amd.com/gpu.device-id`` In the gfx's PCI device ids (``data/gpu_device_ids.json``; the labeller
  has no gfx label, and its ``amd.com/gpu.family`` does not tell gfx90a from gfx942), or a label of
  the site's own (``--node-label gfx942=KEY=VALUE``);
- the reports go to a ReadWriteMany volume (a PersistentVolumeClaim, emitted unless ``--pvc``
  names one), each task marking its end with ``<report>.done`` whatever happened;
- a **merge Job** waits for every mark, builds the table, gates against the baseline folder on the
  volume, and builds the atlas.

The script the pods run is a ConfigMap. Stdlib only.

Why this module is long: every value that reaches the manifest (an image, a node label, a PVC
name, a combination's fields) is checked and quoted here, beside the place it is written, so a
reader sees each value's route from option to YAML in one file (issue 48).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from pytest_rocm._resources import VERSION, load_json
from pytest_rocm.env import arch
from pytest_rocm.matrix import grammar
from pytest_rocm.matrix.tasks import Plan, Task, TaskError, package_header, quoted
from pytest_rocm.matrix.yamltext import dump_all

#: the node labeller's label of the PCI device id (lower-case hex, as data/gpu_device_ids.json)
DEVICE_ID_LABEL = "amd.com/gpu.device-id"
RESOURCE = {"rocm": "amd.com/gpu", "cuda": "nvidia.com/gpu"}
MOUNT = "/reports"
#: where the pods look for pytest-rocm when no --package is given: a wheel on the reports volume
VOLUME_WHEEL = f"$MOUNT/wheels/pytest_rocm-{VERSION}-py3-none-any.whl"


@dataclass(frozen=True)
class K8sOptions:
    run_id: str
    namespace: str | None = None
    image: str = "python:{python}-slim"
    pvc: str | None = None
    gpus: int = 1
    minutes: int = 90
    #: what each pod pip-installs as pytest-rocm; None: the wheel on the volume (VOLUME_WHEEL)
    package: str | None = None
    #: the checkout that wheel is built from (the header says how)
    source: str | None = None
    #: gfx -> (label key, value) of the site's own, instead of the device-id affinity
    node_labels: tuple[tuple[str, str, str], ...] = ()
    host_label: bool = False

    @property
    def claim(self) -> str:
        return self.pvc or "rocm-compat-reports"


def parse_node_labels(values: list[str]) -> tuple[tuple[str, str, str], ...]:
    """``gfx942=node.example.com/gpu=mi300x`` -> ``(("gfx942", "node.example.com/gpu", "mi300x"),)``."""
    parsed = []
    for value in values:
        gfx, _, rest = value.partition("=")
        key, sep, label = rest.partition("=")
        if (
            not sep
            or grammar.shape_problem(key, grammar.LABEL_KEY_RE, "") is not None
            or grammar.shape_problem(label, grammar.LABEL_VALUE_RE, "", 63) is not None
            or not label
        ):
            raise TaskError(
                f"--node-label {value!r}: expected GFX=KEY=VALUE, a Kubernetes label key and value "
                "(gfx942=example.com/gpu=mi300x)"
            )
        gfx = gfx.lower()
        if gfx not in ("cpu", "cuda") and not (arch.is_gfx(gfx) and gfx == arch.split_arch(gfx)[0]):
            raise TaskError(f"--node-label {value!r}: {gfx!r} is not a gfx name (gfx942), cpu or cuda")
        parsed.append((gfx, key, label))
    return tuple(parsed)


def image_for(image: str, python: str) -> str:
    """``--image`` with the combination's Python put in for ``{python}`` (text, never
    ``str.format``: a brace of the user's is no format field); TaskError when it is no image."""
    filled = image.replace("{python}", python)
    problem = grammar.shape_problem(filled, grammar.IMAGE_RE, "be a container image (python:3.12-slim)")
    if problem is not None:
        raise TaskError(f"--image {image!r} {problem}")
    return filled


def _check(options: K8sOptions) -> None:
    """The options a caller that did not come through the command line might give unchecked."""
    image_for(options.image, "3.12")
    for option, value in (("--run-id", options.run_id), ("--namespace", options.namespace), ("--pvc", options.pvc)):
        if value is not None and not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,40}[a-z0-9])?", value):
            raise TaskError(f"{option} {value!r}: expected a Kubernetes name (lower-case letters, digits, '-')")
    if options.package is not None and grammar.package_problem(options.package) is not None:
        raise TaskError(f"--package {options.package!r} {grammar.package_problem(options.package)}")


def _dns(text: str) -> str:
    """A Kubernetes object name (DNS label: 63 characters at most); a long one keeps a hash of the
    whole, so two long names never become one."""
    name = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    if len(name) <= 63:
        return name
    return name[:54].rstrip("-") + "-" + hashlib.sha256(name.encode()).hexdigest()[:8]


def _node_selection(target: str, options: K8sOptions) -> dict[str, Any]:
    """The pod spec's nodeSelector or affinity for a target (nothing for CPU tasks)."""
    if target == "cpu":
        return {}
    own = {gfx: (key, value) for gfx, key, value in options.node_labels}
    if target in own:
        return {"nodeSelector": {own[target][0]: own[target][1]}}
    if target == "cuda":
        return {}  # nvidia.com/gpu alone places it on an NVIDIA node
    ids = load_json("gpu_device_ids.json")["gfx"].get(target)
    if not ids:
        raise TaskError(
            f"no PCI device ids known for {target} (data/gpu_device_ids.json): give --node-label {target}=KEY=VALUE"
        )
    term = {"matchExpressions": [{"key": DEVICE_ID_LABEL, "operator": "In", "values": list(ids)}]}
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}
    }


def _script(plan: Plan, options: K8sOptions) -> str:
    cases = []
    for t in plan.tasks:
        c = t.combo
        index = f" --index-url {quoted([c.index_url])}" if c.index_url else ""
        packages = f"  pip install -q {quoted(c.packages)} {quoted([c.torch])}\n" if c.packages else ""
        require = " --require-gpu" if t.gpus else ""
        override = f"  export HSA_OVERRIDE_GFX_VERSION={quoted([t.override])}\n" if t.override else ""
        cases.append(
            f"  {t.index})\n"
            f"  LABEL={quoted([t.label])}; REPORT={quoted([t.report_file])}; touch_done\n"
            f"  pip install -q {quoted([c.torch])}{index}\n{packages}"
            f'  pip install -q "$PACKAGE" pytest-xdist pytest-timeout\n{override}'
            # --replace: a retried index replaces its own earlier attempt (the folder is this run's)
            f'  rocm-compat run --label "$LABEL" --reports-dir "$OUT" --replace{require} "${{HOST[@]}}" "${{RUN_ARGS[@]}}"'
            " || status=$?\n"
            "  ;;\n"
        )
    host = '  HOST=(--rocm-host-label "$NODE_NAME")\n' if options.host_label else ""
    expected = " ".join(quoted([t.report_file]) for t in plan.tasks)
    package = quoted([options.package]) if options.package is not None else f'"{VOLUME_WHEEL}"'
    return (
        "#!/bin/bash\n"
        f"# rocm-compat matrix --emit k8s (pytest-rocm {VERSION}): task TASK_ID or merge\n"
        "set -euo pipefail\n"
        f"MOUNT=${{ROCM_COMPAT_MOUNT:-{MOUNT}}}\n"
        'OUT="$MOUNT/$ROCM_COMPAT_RUN"\n'
        f"PACKAGE=${{ROCM_COMPAT_PACKAGE:-{package}}}\n"
        f"EXPECTED=({expected})\n"
        'read -r -a RUN_ARGS <<< "${ROCM_COMPAT_RUN_ARGS:-}"\n'
        "HOST=()\n"
        'mkdir -p "$OUT"\n'
        "# an image that carries the combination already (rocm/pytorch) skips the installs\n"
        'if [ -z "${ROCM_COMPAT_PREINSTALLED:-}" ]; then\n'
        "  # shellcheck disable=SC1091  # the venv just built: no file to follow here\n"
        '  python -m venv "${ROCM_COMPAT_WORK:-/work}/venv" && source "${ROCM_COMPAT_WORK:-/work}/venv/bin/activate"\n'
        "fi\n"
        'pip() { if [ -z "${ROCM_COMPAT_PREINSTALLED:-}" ]; then command python -m pip "$@"; fi; }\n'
        "touch_done() { trap 'touch \"$OUT/$REPORT.done\"' EXIT; }  # the merge waits for every mark\n"
        'if [ "$1" = merge ]; then\n'
        '  for f in "${EXPECTED[@]}"; do\n'
        '    until [ -f "$OUT/$f.done" ]; do sleep 30; done\n'
        "  done\n"
        '  pip install -q "$PACKAGE"\n'
        "  status=0 reports=()\n"
        '  for f in "${EXPECTED[@]}"; do\n'
        '    if [ -f "$OUT/$f" ]; then reports+=("$OUT/$f")\n'
        '    elif [ -f "$OUT/$f.partial.jsonl" ]; then reports+=("$OUT/$f.partial.jsonl")\n'
        '    else echo "rocm-compat merge: $f: no report" >&2; status=1; fi\n'
        "  done\n"
        "  [ ${#reports[@]} -gt 0 ] || exit 1\n"
        '  rocm-compat table "${reports[@]}" -o "$OUT/compat.md"\n'
        '  rocm-compat table "${reports[@]}" -o "$OUT/compat.html"\n'
        '  for f in "${reports[@]}"; do\n'
        '    base="$MOUNT/baseline/$(basename "${f%.partial.jsonl}")"\n'
        '    if [ -f "$base" ]; then rocm-compat diff "$base" "$f" || status=1; fi\n'
        "  done\n"
        '  rocm-compat atlas "$MOUNT" -o "$MOUNT/atlas" || status=1\n'
        '  exit "$status"\n'
        "fi\n"
        'read -r -a IDS <<< "$ROCM_COMPAT_TASKS"\n'
        "status=0\n"
        f"{host}"
        'case "${IDS[$JOB_COMPLETION_INDEX]}" in\n'
        + "".join(cases)
        + '  *) echo "rocm-compat: no task for index $JOB_COMPLETION_INDEX" >&2; exit 2 ;;\n'
        "esac\n"
        "# 0 all passed, 1 some rows failed: a measurement either way\n"
        '[ "$status" -le 1 ] || exit "$status"\n'
    )


def _pod(
    options: K8sOptions, python: str, command: list[str], env: dict[str, str], extra: dict[str, Any]
) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": "rocm-compat",
        "image": image_for(options.image, python),
        "command": command,
        "env": [{"name": k, "value": v} for k, v in env.items()]
        + [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "volumeMounts": [
            {"name": "reports", "mountPath": MOUNT},
            {"name": "script", "mountPath": "/scripts"},
            {"name": "work", "mountPath": "/work"},
        ],
    }
    container.update(extra.pop("container", {}))
    return {
        "metadata": {"labels": {"app.kubernetes.io/name": "rocm-compat"}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [container],
            "volumes": [
                {"name": "reports", "persistentVolumeClaim": {"claimName": options.claim}},
                {"name": "script", "configMap": {"name": f"rocm-compat-{options.run_id}", "defaultMode": 0o555}},
                {"name": "work", "emptyDir": {}},
            ],
            **extra,
        },
    }


def _meta(name: str, options: K8sOptions) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/name": "rocm-compat", "rocm-compat/run": options.run_id},
    }
    if options.namespace:
        meta["namespace"] = options.namespace
    return meta


def _jobs(plan: Plan, options: K8sOptions) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str], list[Task]] = {}
    for task in plan.tasks:
        groups.setdefault((task.target, task.combo.python), []).append(task)
    jobs = []
    env = {"ROCM_COMPAT_RUN": options.run_id}
    for (target, python), tasks in groups.items():
        resource = RESOURCE.get(tasks[0].combo.backend)
        limits = {"container": {"resources": {"limits": {resource: options.gpus}}}} if resource else {}
        pod = _pod(
            options,
            python,
            ["bash", "/scripts/run.sh", "task"],
            {**env, "ROCM_COMPAT_TASKS": " ".join(str(t.index) for t in tasks)},
            {**limits, **_node_selection(target, options)},
        )
        jobs.append(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": _meta(_dns(f"rocm-compat-{options.run_id}-{target}-py{python}"), options),
                "spec": {
                    "completionMode": "Indexed",
                    "completions": len(tasks),
                    "parallelism": len(tasks),
                    # a failed index must not end the others (backoffLimit would fail the whole Job):
                    # each index once, however many fail; its end mark is written either way
                    "backoffLimitPerIndex": 0,
                    "maxFailedIndexes": len(tasks),
                    "activeDeadlineSeconds": options.minutes * 60,
                    "template": pod,
                },
            }
        )
    merge = _pod(options, "3.12", ["bash", "/scripts/run.sh", "merge"], env, {})
    jobs.append(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": _meta(_dns(f"rocm-compat-{options.run_id}-merge"), options),
            # waits for every task's mark: as long as the tasks may take, and the merge itself
            "spec": {"backoffLimit": 0, "activeDeadlineSeconds": (options.minutes + 30) * 60, "template": merge},
        }
    )
    return jobs


def _package_lines(options: K8sOptions) -> list[str]:
    """The header's word on the pytest-rocm the pods install (a pod cannot see the checkout: the
    wheel built from it goes on the reports volume)."""
    if options.package is not None:
        return package_header(options.package, None)
    source = options.source or "a pytest-rocm checkout"
    return [
        f"pytest-rocm: every pod installs {VOLUME_WHEEL.replace('$MOUNT', MOUNT)} from the reports volume:",
        f"build it from {source} (python -m pip wheel --no-deps -w DIR {source}) and copy it there;",
        "ROCM_COMPAT_PACKAGE (or --package) names another one.",
    ]


def emit_k8s(plan: Plan, options: K8sOptions) -> str:
    _check(options)
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(f"rocm-compat-{options.run_id}", options),
        "data": {"run.sh": _script(plan, options)},
    }
    documents: list[dict[str, Any]] = [config_map]
    if options.pvc is None:
        documents.insert(
            0,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {k: v for k, v in _meta(options.claim, options).items() if k != "labels"},
                "spec": {"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "20Gi"}}},
            },
        )
    header = [
        f"The ROCm/PyTorch matrix as Kubernetes Jobs: rocm-compat matrix --emit k8s (pytest-rocm {VERSION}), run {options.run_id}.",
        "kubectl apply -f THIS_FILE; the merge Job writes compat.html and the atlas to the reports volume.",
        *_package_lines(options),
        "Tasks (index: combination x target -> report):",
        *(f"  {t.index}: {t.combo.name} x {t.target} -> {t.report_file}" for t in plan.tasks),
        *(f"  left out: {why}" for why in plan.left_out),
    ]
    return dump_all([*documents, *_jobs(plan, options)], header)
