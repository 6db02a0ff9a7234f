"""Caught / tried for a dozen public ROCm bug classes, per profile: the issue-50 evaluation, rerunnable.

    python benchmarks/bench_rocm_classes.py                          # boundary ci and full
    python benchmarks/bench_rocm_classes.py --profiles ci --suites boundary,corpus
    python benchmarks/bench_rocm_classes.py --list                   # the classes and their reports

Each class (``CLASSES``: a public issue, each conditional on a shape, layout or argument and silent)
is a mutant that breaks the run on the device under test only (``--rocm-device=cpu``: parity's
float64 reference and the model criterion's float64 yardstick are left alone), only at the report's
condition: a ``TorchDispatchMode`` over the aten ops, or a patched torch function, inside parity's
``_run`` seam. No row was written for any class: the rows are the generator's and the corpus's.

All classes are active in one run per profile (one collection: ``full``'s arrays take a minute to
build), each recording in which rows it fired; a class is *caught* when some row fails that passed
in the control run (no mutant) and in which that class alone fired (a row where two fired credits
neither). The control run must have no failure. ``full`` on a CPU deselects the big labels that
``bench_boundary_mutants.BIG`` names (they need a GPU's memory and time); the device-profile rows
skip on a CPU. Prints figures; never fails on them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_boundary_mutants import BIG  # noqa: E402

#: name -> (public report, its condition in words)
CLASSES: dict[str, tuple[str, str]] = {
    "rocfft_strided_long_1d": (
        "https://github.com/ROCm/rocFFT/issues/301",
        "1-D c2c FFT over a dimension of stride != 1 with length >= 4096",
    ),
    "rocfft_inverse_strided_batched": (
        "https://github.com/ROCm/rocFFT/issues/273",
        "inverse c2c FFT over a dimension of stride != 1, batch > 1",
    ),
    "hipfft_r2c_strided_batched": (
        "https://github.com/ROCm/hipFFT/issues/8",
        "r2c FFT over a dimension of stride != 1, batch > 1",
    ),
    "rocblas_gemm_grid_y_columns": (
        "https://github.com/ROCm/rocm-libraries/pull/9184",
        "GEMM output with more than 65,536 column tiles of 64 (N > 4,194,304): the trailing columns",
    ),
    "rocblas_hgemm_last_column": (
        "https://github.com/ROCm/rocBLAS/issues/340",
        "fp16 GEMM with n == 1 or k == 1: the last column of C",
    ),
    "ck_gemm_fp16_tt_odd_k": (
        "https://github.com/ROCm/composable_kernel/issues/512",
        "fp16 GEMM, both operands transposed (column-major), K not a multiple of 8",
    ),
    "miopen_bwd_data_1x1_stride2": (
        "https://github.com/ROCm/MIOpen/issues/1495",
        "convolution backward-data, 1x1 kernel, stride 2, a 2x2 input",
    ),
    "miopen_transposed_pad_ge_kernel": (
        "https://github.com/ROCm/MIOpen/issues/55",
        "transposed convolution whose padding is >= its kernel size (1x1 kernel, pad 2)",
    ),
    "miopen_wrw_7x7_pad3": (
        "https://github.com/ROCm/MIOpen/issues/97",
        "convolution backward-weights, 7x7 kernel, padding 3",
    ),
    "miopen_nhwc_fwd_past_int32": (
        "https://github.com/ROCm/rocm-libraries/pull/9768",
        "forward convolution, NHWC (channels_last), a tensor of more than INT_MAX bytes",
    ),
    "miopen_lstm_bias_grid_y": (
        "https://github.com/ROCm/rocm-libraries/issues/10551",
        "LSTM with bias, batch x seq_len > 65,536",
    ),
    "triton_pointwise_past_2e29": (
        "https://github.com/ROCm/triton/issues/944",
        "a bf16 pointwise kernel on 2^29 elements or more: elements past 2^29 read as 0",
    ),
}

#: the plugin the runs load (``-p eval_rocm_classes``): every class, ``EVAL_CLASSES=none`` for the control
PLUGIN = r'''
import json, os
import pytest, torch
from torch.utils._python_dispatch import TorchDispatchMode
import pytest_rocm.parity.check as check

aten = torch.ops.aten
ACTIVE = os.environ.get("EVAL_CLASSES", "none") != "none"
FIRED = set()
GEMM = (aten.mm.default, aten.mm.out, aten.addmm.default, aten.addmm.out, aten.bmm.default, aten.bmm.out,
        aten.baddbmm.default, aten.baddbmm.out)
POINTWISE = (aten.add.Tensor, aten.mul.Tensor, aten.exp.default, aten.gelu.default, aten.silu.default,
             aten.add.out, aten.mul.out, aten.exp.out, aten.copy_.default)


def scaled(t, factor=1.05):
    return t * factor if isinstance(t, torch.Tensor) and (t.is_floating_point() or t.is_complex()) else t


def fft_dims(func, a):
    x, dims = a[0], list(a[1])
    return x, dims, x.numel() // max(1, int(torch.Size([x.shape[d] for d in dims]).numel()))


def gemm_operands(func, a):
    if func in (aten.addmm.default, aten.addmm.out, aten.baddbmm.default, aten.baddbmm.out):
        return a[1], a[2]
    return a[0], a[1]


def col_major(t):
    return t.dim() >= 2 and t.stride(-2) == 1 and t.shape[-1] > 1 and t.shape[-2] > 1


def conditions(func, a):
    """The classes whose condition this call meets."""
    hit = []
    if func == aten._fft_c2c.default:
        x, dims, batch = fft_dims(func, a)
        strided = any(x.stride(d) != 1 for d in dims)
        if len(dims) == 1 and strided and x.shape[dims[0]] >= 4096:
            hit.append("rocfft_strided_long_1d")
        if not a[3] and strided and batch > 1:
            hit.append("rocfft_inverse_strided_batched")
    if func == aten._fft_r2c.default:
        x, dims, batch = fft_dims(func, a)
        if any(x.stride(d) != 1 for d in dims) and batch > 1:
            hit.append("hipfft_r2c_strided_batched")
    if func in GEMM:
        x, w = gemm_operands(func, a)
        n, k = w.shape[-1], x.shape[-1]
        if n > 64 * 65536:
            hit.append("rocblas_gemm_grid_y_columns")
        if x.dtype == torch.float16 and (n == 1 or k == 1):
            hit.append("rocblas_hgemm_last_column")
        if x.dtype == torch.float16 and col_major(x) and col_major(w) and k % 8:
            hit.append("ck_gemm_fp16_tt_odd_k")
    if func == aten.convolution_backward.default:
        inp, weight, stride, padding, transposed = a[1], a[2], a[4], a[5], a[7]
        kernel = weight.shape[2:]
        if not transposed and all(k == 1 for k in kernel) and all(s == 2 for s in stride) and all(
            s <= 2 for s in inp.shape[2:]
        ):
            hit.append("miopen_bwd_data_1x1_stride2")
        if not transposed and all(k == 7 for k in kernel) and all(p == 3 for p in padding):
            hit.append("miopen_wrw_7x7_pad3")
        if transposed and any(p >= k for p, k in zip(padding, kernel)):
            hit.append("miopen_transposed_pad_ge_kernel")
    if func == aten.convolution.default:
        inp, weight, padding, transposed = a[0], a[1], a[4], a[6]
        if transposed and any(p >= k for p, k in zip(padding, weight.shape[2:])):
            hit.append("miopen_transposed_pad_ge_kernel")
        if not transposed and inp.dim() == 4 and inp.is_contiguous(memory_format=torch.channels_last) and not (
            inp.is_contiguous()
        ) and inp.numel() * inp.element_size() > 2**31 - 1:
            hit.append("miopen_nhwc_fwd_past_int32")
    if func in POINTWISE:
        out_like = [t for t in a if isinstance(t, torch.Tensor)]
        if out_like and out_like[0].dtype == torch.bfloat16 and out_like[0].numel() >= 2**29:
            hit.append("triton_pointwise_past_2e29")
    return hit


def apply(name, func, out, a):
    """The wrong result of class ``name``."""
    if name == "rocfft_strided_long_1d" or name.startswith(("rocfft_inverse", "hipfft", "ck_", "miopen_nhwc")):
        return scaled(out)
    if name == "rocblas_gemm_grid_y_columns":
        out = out.clone()
        out[..., 64 * 65536:] = float("nan")  # workgroups never dispatched
        return out
    if name == "rocblas_hgemm_last_column":
        out = out.clone()
        out[..., -1:] *= 1.05
        return out
    if name == "miopen_bwd_data_1x1_stride2":
        return (scaled(out[0]), *out[1:])
    if name == "miopen_wrw_7x7_pad3":
        return (out[0], scaled(out[1]), *out[2:])
    if name == "miopen_transposed_pad_ge_kernel":
        return scaled(out) if isinstance(out, torch.Tensor) else tuple(scaled(o) for o in out)
    if name == "triton_pointwise_past_2e29":
        out.view(-1)[2**29:] = 0
        return out
    raise AssertionError(name)


class Break(TorchDispatchMode):
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        try:
            names = conditions(func, args)
        except Exception:  # arguments a condition does not expect
            names = []
        for name in names:
            FIRED.add(name)
            out = apply(name, func, out, args)
        return out


def lstm_patched(real):
    def lstm(*args, **kwargs):
        out = real(*args, **kwargs)
        x = args[0]
        if isinstance(x, torch.Tensor) and x.dim() == 3 and len(args) > 3 and args[3] is True:  # has_biases
            if x.shape[0] * x.shape[1] > 65536:
                FIRED.add("miopen_lstm_bias_grid_y")
                return (scaled(out[0]), *out[1:])
        return out
    return lstm


@pytest.fixture(autouse=True)
def break_the_device_run(request, monkeypatch):
    FIRED.clear()
    if ACTIVE and "rocm_device" in request.fixturenames:
        device = request.getfixturevalue("rocm_device")
        real_run = check._run

        def run(fn, args, kwargs, dev, dtype, *rest, **more):
            emulated = (len(rest) > 1 and rest[1] is not None) or more.get("round_to") is not None
            if dev is not device or dtype == torch.float64 or emulated:
                return real_run(fn, args, kwargs, dev, dtype, *rest, **more)
            with pytest.MonkeyPatch.context() as mp:
                mp.setattr(torch._VF, "lstm", lstm_patched(torch._VF.lstm))
                with Break():
                    return real_run(fn, args, kwargs, dev, dtype, *rest, **more)

        monkeypatch.setattr(check, "_run", run)
    yield
    if FIRED:
        path = os.path.join(os.environ["EVAL_FIRED_DIR"], f"{os.getpid()}.jsonl")
        with open(path, "a") as f:
            f.write(json.dumps({"nodeid": request.node.nodeid, "fired": sorted(FIRED)}) + "\n")
'''

SUITES = {
    "boundary": "suites/operators/test_boundary.py suites/operators/test_boundary_device.py",
    "corpus": "suites/corpus",
}


def run(
    suite: str, profile: str, active: bool, work: Path, workers: int, select: str = ""
) -> tuple[dict[str, str], dict[str, list[str]], float]:
    """(outcome per node id, classes fired per node id, seconds) of one run."""
    tag = f"{suite}-{profile}-{'classes' if active else 'control'}"
    fired_dir = work / f"fired-{tag}"
    fired_dir.mkdir()
    report = work / f"{tag}.json"
    cmd = [sys.executable, "-m", "pytest", *SUITES[suite].split(), "--rocm-device=cpu", f"--rocm-scale={profile}"]
    cmd += ["-q", "-p", "no:cacheprovider", "-p", "no:randomly", "-p", "eval_rocm_classes", f"--rocm-report={report}"]
    if workers:
        cmd += ["-n", str(workers)]
    keywords = [f"({select})"] if select else []
    if suite == "boundary" and profile == "full":
        keywords += [f"not {label}" for label in BIG]
    if keywords:
        cmd += ["-k", " and ".join(keywords)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(work), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.update(EVAL_CLASSES="all" if active else "none", EVAL_FIRED_DIR=str(fired_dir))
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    seconds = time.perf_counter() - start
    outcomes = {r["nodeid"]: r["outcome"] for r in json.loads(report.read_text())["results"]} if report.exists() else {}
    fired: dict[str, list[str]] = {}
    for file in fired_dir.glob("*.jsonl"):
        for line in file.read_text().splitlines():
            entry = json.loads(line)
            fired[entry["nodeid"]] = entry["fired"]
    return outcomes, fired, seconds


def judge(control: dict[str, str], broken: dict[str, str], fired: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """Per class: rows it alone fired in that failed (caught), rows it fired in at all, rows shared."""
    out: dict[str, dict[str, int]] = defaultdict(lambda: {"caught": 0, "fired": 0, "shared": 0})
    for nodeid, names in fired.items():
        failed = broken.get(nodeid) in ("failed", "error") and control.get(nodeid) in ("passed", "xpassed")
        for name in names:
            out[name]["fired"] += 1
            if failed and len(names) == 1:
                out[name]["caught"] += 1
            elif failed:
                out[name]["shared"] += 1
    return out


def device_reach(work: Path) -> dict[str, list[str]]:
    """Class -> the device-profile rows whose call meets its condition, on meta tensors of the rows'
    real shapes and dtypes (those rows skip on a CPU: whether they *catch* it needs a GPU)."""
    import torch

    sys.path[:0] = [str(work), str(ROOT / "suites" / "operators")]
    os.environ["EVAL_CLASSES"] = "all"
    import boundary_device
    import eval_rocm_classes as plugin

    from pytest_rocm.coverage.catalogue_device import DEVICE_ROWS

    reach: dict[str, list[str]] = defaultdict(list)
    for row in DEVICE_ROWS:
        built = boundary_device.builder(row.key, row.dims)([t.shape for t in row.inputs], "meta")
        args = [a.to(getattr(torch, row.dtype)) if a.is_floating_point() else a for a in built.args]
        plugin.FIRED.clear()
        with plugin.Break(), PatchedLstm(plugin, torch):
            built.fn(*args)
        for name in plugin.FIRED:
            reach[name].append(row.feature)
    return reach


class PatchedLstm:
    def __init__(self, plugin: object, torch: object) -> None:
        self.plugin, self.vf = plugin, torch._VF  # type: ignore[attr-defined]

    def __enter__(self) -> None:
        self.vf.lstm = self.plugin.lstm_patched(self.vf.lstm)  # type: ignore[attr-defined]

    def __exit__(self, *exc: object) -> None:
        del self.vf.lstm


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profiles", default="ci,full")
    parser.add_argument("--suites", default="boundary")
    parser.add_argument("-n", "--workers", type=int, default=2, help="xdist workers (this machine: at most 2)")
    parser.add_argument("-k", dest="select", default="", help="only these rows (a quick look; not the figure)")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--device-reach", action="store_true", help="which classes the device profile reaches (meta)")
    args = parser.parse_args()
    if args.list:
        for name, (url, condition) in CLASSES.items():
            print(f"{name}: {condition} ({url})")
        return 0
    with tempfile.TemporaryDirectory(prefix="rocm-classes-") as tmp:
        work = Path(tmp)
        (work / "eval_rocm_classes.py").write_text(PLUGIN)
        if args.device_reach:
            reach = device_reach(work)
            for name, (url, _) in CLASSES.items():
                rows = reach.get(name, [])
                print(f"[device profile] {name:34s} {'reached' if rows else 'not reached'} by {len(rows)} rows "
                      f"{rows[:2]}  {url}")  # fmt: skip
            print(f"[device profile] reaches {len(reach)} / {len(CLASSES)} (meta tensors: conditions, not verdicts)")
            return 0
        for suite in args.suites.split(","):
            for profile in args.profiles.split(","):
                control, fired_clean, s1 = run(suite, profile, False, work, args.workers, args.select)
                red = sorted(n for n, o in control.items() if o in ("failed", "error"))
                print(
                    f"[{suite} {profile}] control (no mutant): {len(red)} of {len(control)} rows fail, {s1:.0f} s",
                    flush=True,
                )
                for nodeid in red[:10]:
                    print(f"    control failure: {nodeid}", flush=True)
                assert not fired_clean, "a class fired in the control run"
                broken, fired, s2 = run(suite, profile, True, work, args.workers, args.select)
                verdicts = judge(control, broken, fired)
                caught = 0
                for name, (url, _) in CLASSES.items():
                    v = verdicts.get(name, {"caught": 0, "fired": 0, "shared": 0})
                    caught += bool(v["caught"])
                    state = "caught" if v["caught"] else ("MISSED (no row reaches it)" if not v["fired"] else "MISSED")
                    print(f"[{suite} {profile}] {name:34s} {state}: fired in {v['fired']} rows, {v['caught']} fail "
                          f"(+{v['shared']} shared)  {url}", flush=True)  # fmt: skip
                print(
                    f"[{suite} {profile}] caught {caught} / {len(CLASSES)}; {len(broken)} rows, {s2:.0f} s", flush=True
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
