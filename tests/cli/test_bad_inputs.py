"""The adversarial table (issue 19): bad values at every boundary of every command and option.

Each case asserts: the exit status; exactly one message line, naming the value and where it came
from; no traceback; an end within a time limit (a FIFO must not hang a reader); and every file
that was in the folder before is unchanged after (nothing replaced, truncated or deleted).
The bad files are built here: FIFOs, device-like nodes (``mknod`` in the test's own folder, as
root only, never a real /dev path), non-UTF-8 bytes, symlink loops, JSON with bad values.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm import cli

ROOT = Path(__file__).resolve().parents[2]
ENV_GOOD = json.loads((ROOT / "tests" / "data" / "envs" / "mi300x_8.json").read_text(encoding="utf-8"))
REPORT_GOOD = json.loads((ROOT / "tests" / "data" / "report" / "gfx1100.json").read_text(encoding="utf-8"))
LIMIT_S = 20.0

#: special file contents
FIFO, DEVICE, FOLDER, LOOP = "<fifo>", "<device>", "<folder>", "<symlink loop>"


def _mutated(base: dict[str, Any], change: Callable[[dict[str, Any]], Any]) -> bytes:
    document = copy.deepcopy(base)
    change(document)
    return json.dumps(document).encode()


def env_with(change: Callable[[dict[str, Any]], Any]) -> bytes:
    return _mutated(ENV_GOOD, change)


def report_with(change: Callable[[dict[str, Any]], Any]) -> bytes:
    return _mutated(REPORT_GOOD, change)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """``_set("devices.0.total_memory", -1)``"""

    def change(document: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = document
        for part in parents:
            node = node[int(part)] if part.isdigit() else node[part]
        node[int(last) if last.isdigit() else last] = value

    return change


def _dup_device(document: dict[str, Any]) -> None:
    document["devices"][1]["index"] = 0


def _dup_node(document: dict[str, Any]) -> None:
    document["system"]["gpus"][1]["node"] = document["system"]["gpus"][0]["node"]


def _dup_result(document: dict[str, Any]) -> None:
    document["results"].append(dict(document["results"][0], outcome="failed"))


#: (id, value-file contents, the message's expected fragment: what was wrong, named)
BAD_ENVIRONMENTS: list[tuple[str, bytes | str, str]] = [
    (
        "memory-negative",
        env_with(_set("devices.0.total_memory", -1)),
        "devices[0].total_memory is -1, expected at least 0",
    ),
    (
        "memory-1e40",
        env_with(_set("devices.0.total_memory", 1e40)),
        "devices[0].total_memory is 1e+40, expected at most",
    ),
    (
        "memory-text",
        env_with(_set("devices.0.total_memory", "lots")),
        "devices[0].total_memory is 'lots', expected integer",
    ),
    ("index-negative", env_with(_set("devices.0.index", -5)), "devices[0].index is -5, expected at least 0"),
    ("index-bool", env_with(_set("devices.0.index", True)), "devices[0].index is True, expected integer"),
    ("index-twice", env_with(_dup_device), "devices: two entries have index 0"),
    ("node-twice", env_with(_dup_node), "system.gpus: two entries have node"),
    (
        "gfx-letter-o",
        env_with(_set("devices.0.gfx", "gfx11OO")),
        "devices[0].gfx is 'gfx11OO', not an architecture name",
    ),
    ("arch-empty", env_with(_set("devices.0.arch", "")), "devices[0].arch is '', not an architecture name"),
    ("hardware-gfx-features", env_with(_set("devices.0.hardware_gfx", "gfx942:xnack-")), "devices[0].hardware_gfx is"),
    ("arch-list-garbage", env_with(_set("arch_list.0", "banana")), "arch_list[0] is 'banana'"),
    ("torch-banana", env_with(_set("torch", "banana")), "torch is 'banana', not a PEP 440 version"),
    ("rocm-not-a-version", env_with(_set("rocm", "not.a.version")), "rocm is 'not.a.version', not a PEP 440 version"),
    ("system-rocm-version", env_with(_set("system.rocm_version", "six")), "system.rocm_version is 'six'"),
    ("library-version", env_with(_set("libraries.triton", "latest")), "libraries.triton is 'latest'"),
    ("hip-garbage", env_with(_set("hip", "hip!")), "hip is 'hip!'"),
    ("python-garbage", env_with(_set("python", "three")), "python is 'three'"),
    ("backend-gpu", env_with(_set("backend", "gpu")), "backend is 'gpu', expected one of rocm, cuda, cpu"),
    (
        "compute-units-zero",
        env_with(_set("devices.0.compute_units", 0)),
        "devices[0].compute_units is 0, expected at least 1",
    ),
    (
        "feature-not-bool",
        env_with(_set("devices.0.features", {"xnack": "maybe"})),
        "devices[0].features.xnack is 'maybe'",
    ),
    (
        "target-version-negative",
        env_with(_set("system.gpus.0.gfx_target_version", -1)),
        "system.gpus[0].gfx_target_version is -1",
    ),
    (
        "target-version-huge",
        env_with(_set("system.gpus.0.gfx_target_version", 999999999)),
        "gfx_target_version is 999999999",
    ),
    ("vram-text", env_with(_set("system.gpus.0.vram", "64G")), "system.gpus[0].vram is '64G'"),
    (
        "vendor-id-huge",
        env_with(_set("system.gpus.0.vendor_id", 70000)),
        "system.gpus[0].vendor_id is 70000, expected at most 65535",
    ),
    ("devices-not-list", env_with(_set("devices", "x")), "devices is 'x', expected array"),
    ("schema-wrong", env_with(_set("schema", "pytest-rocm/environment/9")), "schema is 'pytest-rocm/environment/9'"),
    ("top-level-list", b"[]", "expected a JSON object, got list"),
    (
        "nan-literal",
        json.dumps(ENV_GOOD).replace('"total_memory": 206141652992', '"total_memory": NaN', 1).encode(),
        "NaN is not JSON",
    ),
    (
        "duplicate-key",
        b'{"schema": "pytest-rocm/environment/1", "torch": "2.6.0", "torch": "banana"}',
        "key 'torch' appears twice",
    ),
    ("deep-nesting", b"[" * 100000 + b"]" * 100000, "nested too deeply"),
    (
        "non-utf8",
        b'{"schema": "pytest-rocm/environment/1", "torch": "\xff\xfe"}',
        "not UTF-8 text (byte 0xff at offset",
    ),
    ("utf16", '{"schema": 1}'.encode("utf-16"), "not UTF-8 text"),
    ("empty", b"", "empty file"),
    ("truncated", json.dumps(ENV_GOOD).encode()[:200], "truncated JSON"),
    ("fifo", FIFO, "is a FIFO (named pipe), not a recorded environment"),
    ("device-node", DEVICE, "is a character device, not a recorded environment"),
    ("folder", FOLDER, "is a directory, not a recorded environment"),
    ("symlink-loop", LOOP, "cannot read (Too many levels of symbolic links)"),
]

BAD_REPORTS: list[tuple[str, bytes | str, str]] = [
    ("suite-number", report_with(_set("results.0.suite", 5)), "results[0].suite is 5, expected string"),
    ("nodeid-twice", report_with(_dup_result), "is also results[0] (one result per test)"),
    ("parity-not-object", report_with(_set("results.0.parity", [5])), "results[0].parity[0] is 5, expected object"),
    (
        "parity-figure-text",
        report_with(_set("results.0.parity.0.max_abs", "big")),
        "results[0].parity[0].max_abs is 'big'",
    ),
    ("parity-ok-text", report_with(_set("results.0.parity.0.ok", "yes")), "results[0].parity[0].ok is 'yes'"),
    ("outcome-unknown", report_with(_set("results.0.outcome", "exploded")), "results[0].outcome is 'exploded'"),
    (
        "duration-negative",
        report_with(_set("results.0.duration", -1)),
        "results[0].duration is -1, expected at least 0",
    ),
    ("feature-empty", report_with(_set("results.0.feature", "")), "results[0].feature"),
    ("label-empty", report_with(_set("label", "")), "label"),
    ("results-object", report_with(_set("results", {})), "results is {}, expected array"),
    ("summary-negative", report_with(_set("summary.passed", -3)), "summary.passed is -3, expected at least 0"),
    ("scale-unknown", report_with(_set("scale", "huge")), "scale is 'huge'"),
    ("environment-index", report_with(_set("environment.devices.0.index", -5)), "environment.devices[0].index is -5"),
    ("environment-torch", report_with(_set("environment.torch", "banana")), "environment.torch is 'banana'"),
    ("schema-wrong", report_with(_set("schema", "pytest-rocm/report/2")), "schema is 'pytest-rocm/report/2'"),
    (
        "nan-literal",
        json.dumps(REPORT_GOOD).replace('"duration": ', '"duration": NaN, "x": ', 1).encode(),
        "NaN is not JSON",
    ),
    ("non-utf8", b"\x89PNG\r\n\x1a\n", "not UTF-8 text (byte 0x89 at offset 0)"),
    ("fifo", FIFO, "is a FIFO (named pipe), not a report"),
    ("device-node", DEVICE, "is a character device, not a report"),
    ("folder", FOLDER, "is a directory, not a report"),
    ("symlink-loop", LOOP, "cannot read (Too many levels of symbolic links)"),
]


def sidecar_of(document: dict[str, Any], extra_lines: tuple[Any, ...] = ()) -> bytes:
    """The sidecar an interrupted run of ``document`` leaves: its header fields on line 1, one
    record a line, then ``extra_lines`` (any JSON values)."""
    header = {k: v for k, v in document.items() if k not in ("schema", "results", "summary")}
    lines: list[Any] = [{"schema": "pytest-rocm/report-sidecar/1", "pid": 1, **header}]
    lines += document["results"] if isinstance(document["results"], list) else [document["results"]]
    return "".join(json.dumps(line) + "\n" for line in (*lines, *extra_lines)).encode()


def sidecar_with(change: Callable[[dict[str, Any]], Any], *extra_lines: Any) -> bytes:
    document = copy.deepcopy(REPORT_GOOD)
    change(document)
    return sidecar_of(document, extra_lines)


def _same(document: dict[str, Any]) -> None:
    pass


#: the line after the last record of REPORT_GOOD's sidecar
_NEXT = len(REPORT_GOOD["results"]) + 2

BAD_SIDECARS: list[tuple[str, bytes | str, str]] = [
    ("line-number", sidecar_with(_same, 5), f"line {_NEXT}: expected a JSON object (one test's record), got int"),
    ("line-string", sidecar_with(_same, "passed"), f"line {_NEXT}: expected a JSON object (one test's record), got str"),
    ("line-list", sidecar_with(_same, [1, 2]), f"line {_NEXT}: expected a JSON object (one test's record), got list"),
    ("line-null", sidecar_with(_same, None), f"line {_NEXT}: expected a JSON object (one test's record), got NoneType"),
    ("record-empty", sidecar_with(_same, {}), f"line {_NEXT}: field 'nodeid' is missing"),
    ("outcome-list", sidecar_with(_set("results.0.outcome", ["passed"])), "line 2: outcome is ['passed'], expected one of"),
    ("nodeid-number", sidecar_with(_set("results.1.nodeid", 5)), "line 3: nodeid is 5, expected string"),
    ("parity-number", sidecar_with(_set("results.0.parity", 5)), "line 2: parity is 5, expected array"),
    ("parity-figure-text", sidecar_with(_set("results.0.parity.0.max_abs", "big")), "line 2: parity[0].max_abs is 'big'"),
    ("info-list", sidecar_with(_set("results.0.info", [])), "line 2: info is [], expected object or null"),
    ("nodeid-twice", sidecar_with(_same, REPORT_GOOD["results"][0]), f"line {_NEXT}: nodeid {REPORT_GOOD['results'][0]['nodeid']!r} is also on line 2"),
    ("header-number", b"5\n", "line 1: schema is 'int', expected 'pytest-rocm/report-sidecar/1'"),
    ("header-label", sidecar_with(_set("label", 5)), "line 1: label is 5, expected string"),
    ("header-environment", sidecar_with(_set("environment", [])), "line 1: environment is [], expected object"),
    ("header-scale", sidecar_with(_set("scale", 1)), "line 1: scale is 1, expected one of"),
    ("environment-line-device", sidecar_with(_same, {"sidecar": "environment", "device": 5}), f"line {_NEXT}: device is 5, expected string or null"),
    ("environment-line-kind", sidecar_with(_same, {"sidecar": []}), f"line {_NEXT}: sidecar is [], expected one of 'environment', 'collected', 'finished', 'running'"),
    ("collected-line-no-tests", sidecar_with(_same, {"sidecar": "collected"}), f"line {_NEXT}: tests is None, expected a list of non-empty strings"),
    ("collected-line-test-number", sidecar_with(_same, {"sidecar": "collected", "tests": ["a.py::b", 5]}), f"line {_NEXT}: tests is ['a.py::b', 5], expected a list of non-empty strings"),
    ("collected-line-marked-list", sidecar_with(_same, {"sidecar": "collected", "tests": [], "marked": []}), f"line {_NEXT}: marked is [], expected an object of non-empty strings"),
    ("collected-line-device-ids-text", sidecar_with(_same, {"sidecar": "collected", "tests": [], "device_ids": "cpu"}), f"line {_NEXT}: device_ids is 'cpu', expected a list of non-empty strings"),
    ("running-line-no-nodeid", sidecar_with(_same, {"sidecar": "running", "feature": "a/b", "suite": "a"}), f"line {_NEXT}: nodeid is None, expected a non-empty string"),
    ("running-line-feature-number", sidecar_with(_same, {"sidecar": "running", "nodeid": "a.py::b", "feature": 5, "suite": "a"}), f"line {_NEXT}: feature is 5, expected a non-empty string"),
]  # fmt: skip


@dataclass
class Case:
    id: str
    argv: list[str]  # {tmp} and {good_env}/{good_report} are replaced
    files: dict[str, bytes | str] = field(default_factory=dict)
    status: int = 2
    expect: str = ""
    #: where the message line must start (the command that speaks)
    prefix: str = ""


def _cases() -> list[Case]:
    cases: list[Case] = []
    for name, content, expect in BAD_ENVIRONMENTS:
        for command, flag in (("env", "--env"), ("doctor", "--env")):
            cases.append(
                Case(f"{command}-{name}", [command, flag, "{tmp}/bad.json"], {"bad.json": content}, 2, expect,
                     f"rocm-compat {command}: {{tmp}}/bad.json: ")
            )  # fmt: skip
    for name, content, expect in BAD_REPORTS:
        cases.append(
            Case(f"table-{name}", ["table", "{tmp}/bad.json"], {"bad.json": content}, 2, expect,
                 "rocm-compat table: {tmp}/bad.json: ")
        )  # fmt: skip
        cases.append(
            Case(f"diff-{name}", ["diff", "{good_report}", "{tmp}/bad.json"], {"bad.json": content}, 2, expect,
                 "rocm-compat diff: {tmp}/bad.json: ")
        )  # fmt: skip
    for name, content, expect in BAD_SIDECARS:
        cases.append(
            Case(f"table-sidecar-{name}", ["table", "{tmp}/r.json.partial.jsonl"], {"r.json.partial.jsonl": content}, 2,
                 expect, "rocm-compat table: {tmp}/r.json.partial.jsonl: ")
        )  # fmt: skip
        cases.append(
            Case(f"diff-sidecar-{name}", ["diff", "{good_report}", "{tmp}/r.json.partial.jsonl"],
                 {"r.json.partial.jsonl": content}, 2, expect, "rocm-compat diff: {tmp}/r.json.partial.jsonl: ")
        )  # fmt: skip
    numbers = [
        ("diff-floor-negative", ["--floor", "-1"], "argument --floor: '-1': the floor must be at least 0"),
        ("diff-floor-nan", ["--floor", "nan"], "argument --floor: 'nan' is not a number"),
        ("diff-floor-inf", ["--floor", "inf"], "argument --floor: 'inf' is not a number"),
        ("diff-floor-arabic", ["--floor", "٣"], "argument --floor: '٣' is not a number"),
        ("diff-floor-text", ["--floor", "small"], "argument --floor: 'small' is not a number"),
        ("diff-factor-zero", ["--factor", "0"], "argument --factor: '0': the factor must be greater than 0"),
        ("diff-factor-negative", ["--factor", "-2"], "argument --factor: '-2': the factor must be greater than 0"),
        ("diff-factor-nan", ["--factor", "nan"], "argument --factor: 'nan' is not a number"),
        ("diff-factor-inf", ["--factor", "1e999"], "argument --factor: '1e999' is not a finite number"),
        ("diff-factor-arabic", ["--factor", "١٠"], "argument --factor: '١٠' is not a number"),
    ]
    for name, extra, expect in numbers:
        cases.append(
            Case(name, ["diff", "{good_report}", "{good_report}", *extra], {}, 2, expect, "rocm-compat diff: ")
        )
    vet_numbers = [  # vet takes its numbers through the same argtypes ('٣' is 3 to float() and int())
        ("vet-timeout-arabic", ["--timeout", "٣"], "argument --timeout: '٣' is not a number"),
        ("vet-timeout-nan", ["--timeout", "nan"], "argument --timeout: 'nan' is not a number"),
        ("vet-timeout-negative", ["--timeout", "-5"], "'-5': the time limit in seconds must be greater than 0"),
        ("vet-suite-timeout-inf", ["--suite-timeout", "1e999"], "'1e999' is not a finite number"),
        ("vet-show-negative", ["--show", "-1"], "argument --show: '-1': the count must be at least 0"),
        ("vet-show-arabic", ["--show", "٣"], "argument --show: '٣' is not a whole number"),
    ]
    for name, extra, expect in vet_numbers:
        cases.append(Case(name, ["vet", "packaging", *extra], {}, 2, expect, "rocm-compat vet: "))
    cases += [
        Case("diff-empty-path", ["diff", "", "{good_report}"], {}, 2, "argument BASE: an empty path names no file", "rocm-compat diff: "),
        Case("table-empty-path", ["table", ""], {}, 2, "argument REPORT: an empty path names no file", "rocm-compat table: "),
        Case("table-missing", ["table", "{tmp}/none.json"], {}, 2, "{tmp}/none.json: no such file", "rocm-compat table: "),
        Case("table-output-fifo", ["table", "{good_report}", "-o", "{tmp}/out.md"], {"out.md": FIFO}, 2,
             "{tmp}/out.md: is a FIFO (named pipe), not a regular file: refusing to replace it", "rocm-compat table: "),
        Case("table-output-device", ["table", "{good_report}", "-o", "{tmp}/out.md"], {"out.md": DEVICE}, 2,
             "{tmp}/out.md: is a character device, not a regular file", "rocm-compat table: "),
        Case("table-output-empty", ["table", "{good_report}", "-o", ""], {}, 2, "argument -o/--output: an empty path", "rocm-compat table: "),
        Case("env-output-fifo", ["env", "--env", "{good_env}", "-o", "{tmp}/e.json"], {"e.json": FIFO}, 2,
             "cannot write {tmp}/e.json: is a FIFO (named pipe), not a regular file", "rocm-compat env: "),
        Case("env-output-device", ["env", "--env", "{good_env}", "-o", "{tmp}/e.json"], {"e.json": DEVICE}, 2,
             "cannot write {tmp}/e.json: is a character device", "rocm-compat env: "),
        Case("env-output-folder", ["env", "--env", "{good_env}", "-o", "{tmp}/e.json"], {"e.json": FOLDER}, 2,
             "cannot write {tmp}/e.json: is a directory", "rocm-compat env: "),
        Case("env-env-empty", ["env", "--env", ""], {}, 2, "argument --env: an empty path names no file", "rocm-compat env: "),
        Case("doctor-env-empty", ["doctor", "--env", ""], {}, 2, "argument --env: an empty path names no file", "rocm-compat doctor: "),
        Case("doctor-env-missing", ["doctor", "--env", "{tmp}/none.json"], {}, 2, "{tmp}/none.json: no such file", "rocm-compat doctor: "),
        Case("doctor-ollama-log-empty", ["doctor", "--env", "{good_env}", "--ollama-log", ""], {}, 2,
             "argument --ollama-log: an empty path names no file", "rocm-compat doctor: "),
        Case("doctor-ollama-log-missing", ["doctor", "--env", "{good_env}", "--ollama-log", "{tmp}/none.log"], {}, 2,
             "--ollama-log {tmp}/none.log: no such file", "rocm-compat doctor: "),
        Case("doctor-ollama-log-fifo", ["doctor", "--env", "{good_env}", "--ollama-log", "{tmp}/s.log"], {"s.log": FIFO}, 2,
             "--ollama-log {tmp}/s.log: is a FIFO (named pipe), not a server log", "rocm-compat doctor: "),
        Case("doctor-ollama-log-device", ["doctor", "--env", "{good_env}", "--ollama-log", "{tmp}/s.log"], {"s.log": DEVICE}, 2,
             "--ollama-log {tmp}/s.log: is a character device, not a server log", "rocm-compat doctor: "),
        Case("matrix-file-empty", ["matrix", "--file", ""], {}, 2, "argument --file: an empty path names no file", "rocm-compat matrix: "),
        Case("matrix-file-fifo", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": FIFO}, 2,
             "{tmp}/c.toml: is a FIFO (named pipe), not a combinations file", "rocm-compat matrix: "),
        Case("matrix-file-device", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": DEVICE}, 2,
             "{tmp}/c.toml: is a character device, not a combinations file", "rocm-compat matrix: "),
        Case("matrix-file-folder", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": FOLDER}, 2,
             "{tmp}/c.toml: is a directory, not a combinations file", "rocm-compat matrix: "),
        Case("matrix-file-non-utf8", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": b'[[combo]]\nname = "\xe9"\n'}, 2,
             "{tmp}/c.toml: not UTF-8 text (byte 0xe9 at offset", "rocm-compat matrix: "),
        Case("matrix-file-loop", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": LOOP}, 2,
             "{tmp}/c.toml: cannot read (Too many levels of symbolic links)", "rocm-compat matrix: "),
        Case("matrix-file-not-toml", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": b"[[combo\n"}, 2,
             "{tmp}/c.toml: not valid TOML", "rocm-compat matrix: "),
        Case("matrix-file-deep", ["matrix", "--file", "{tmp}/c.toml"], {"c.toml": b"x = " + b"[" * 50000 + b"]" * 50000}, 2,
             "{tmp}/c.toml: ", "rocm-compat matrix: "),
        Case("matrix-emit-unknown", ["matrix", "--emit", "yaml"], {}, 2, "argument --emit: invalid choice: 'yaml'", "rocm-compat matrix: "),
        Case("run-label-empty", ["run", "--label", ""], {}, 2, "argument --label: an empty label names nothing", "rocm-compat run: "),
        Case("run-label-newline", ["run", "--label", "a\nb"], {}, 2, "argument --label: 'a\\nb': a label cannot contain control", "rocm-compat run: "),
        Case("run-reports-dir-empty", ["run", "--reports-dir", ""], {}, 2, "argument --reports-dir: an empty path", "rocm-compat run: "),
        Case("run-suites-empty", ["run", "--suites", ""], {}, 2, "argument --suites: an empty path", "rocm-compat run: "),
        Case("run-suites-missing", ["run", "--suites", "{tmp}/none"], {}, 2, "{tmp}/none: no suites folder there", "rocm-compat run: "),
    ]  # fmt: skip
    return cases


CASES = _cases()


def _make(folder: Path, files: dict[str, bytes | str]) -> None:
    for name, content in files.items():
        path = folder / name
        if content == FIFO:
            os.mkfifo(path)
        elif content == DEVICE:
            if os.geteuid() != 0:
                pytest.skip("mknod of a device-like node needs root")
            os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers, in tmp
        elif content == FOLDER:
            path.mkdir()
        elif content == LOOP:
            path.symlink_to(folder / f"{name}.other")
            (folder / f"{name}.other").symlink_to(path)
        else:
            assert isinstance(content, bytes)
            path.write_bytes(content)


def snapshot(folder: Path) -> dict[str, tuple[Any, ...]]:
    """Every entry's kind, identity and (for regular files) content: what must not change."""
    seen: dict[str, tuple[Any, ...]] = {}
    for path in sorted(folder.rglob("*")):
        info = os.lstat(path)
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else None
        seen[str(path.relative_to(folder))] = (stat.S_IFMT(info.st_mode), info.st_ino, info.st_rdev, content)
    return seen


def _fill(text: str, tmp: Path) -> str:
    return (
        text.replace("{tmp}", str(tmp))
        .replace("{good_env}", str(ROOT / "tests" / "data" / "envs" / "mi300x_8.json"))
        .replace("{good_report}", str(ROOT / "tests" / "data" / "report" / "gfx1100.json"))
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_naming_it(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _make(tmp_path, case.files)
    before = snapshot(tmp_path)
    start = time.monotonic()
    status = cli.main([_fill(a, tmp_path) for a in case.argv])
    elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert status == case.status, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith(_fill(case.prefix, tmp_path)), lines[0]
    assert _fill(case.expect, tmp_path) in lines[0]
    assert "Traceback" not in out + err
    assert elapsed < LIMIT_S
    assert snapshot(tmp_path) == before  # nothing replaced, truncated, created or deleted


def test_the_table_has_a_case_for_every_class() -> None:
    ids = {c.id for c in CASES}
    assert len(CASES) >= 100
    for needed in ("fifo", "device-node", "non-utf8", "symlink-loop", "index-twice", "nodeid-twice", "floor-nan"):
        assert any(needed in i for i in ids), needed


# -- the pytest plugin's options, variables and ini values ----------------------------------------
@dataclass
class PytestCase:
    id: str
    args: list[str]
    env: dict[str, str] = field(default_factory=dict)
    ini: str = ""
    files: dict[str, bytes | str] = field(default_factory=dict)
    expect: str = ""
    #: a pyproject.toml instead of the tox.ini of ``ini`` (its whole text)
    toml: str = ""


PYTEST_CASES = [
    PytestCase("device-arabic-digit", ["--rocm-device=cuda:٣"], expect="--rocm-device='cuda:٣': expected cpu, cuda or cuda:N"),
    PytestCase("device-negative", ["--rocm-device=cuda:-1"], expect="--rocm-device='cuda:-1': expected cpu, cuda or cuda:N"),
    PytestCase("device-word", ["--rocm-device=gpu"], expect="--rocm-device='gpu': expected cpu"),
    PytestCase("device-variable", [], env={"PYTEST_ROCM_DEVICE": "cuda:٣"}, expect="PYTEST_ROCM_DEVICE='cuda:٣': expected"),
    PytestCase("device-ini", [], ini="rocm_device = cuda:x", expect="rocm_device in tox.ini='cuda:x': expected"),
    PytestCase("gfx-letter-o", ["--rocm-gfx=gfx11OO"], expect="--rocm-gfx='gfx11OO': "),
    PytestCase("gfx-empty", ["--rocm-gfx=,"], expect="--rocm-gfx=',': no architecture given"),
    PytestCase("scale-huge", ["--rocm-scale=huge"], expect="--rocm-scale='huge': expected ci or full"),
    PytestCase("require-gpu-maybe", [], env={"PYTEST_ROCM_REQUIRE_GPU": "maybe"}, expect="PYTEST_ROCM_REQUIRE_GPU='maybe': expected 1/0"),
    PytestCase("report-empty", ["--rocm-report="], expect="--rocm-report='': an empty path names no file"),
    PytestCase("report-fifo", ["--rocm-report=r.json"], files={"r.json": FIFO}, expect="--rocm-report r.json: cannot write (r.json is a FIFO"),
    PytestCase("report-device", ["--rocm-report=r.json"], files={"r.json": DEVICE}, expect="--rocm-report r.json: cannot write (r.json is a character device"),
    PytestCase("report-folder", ["--rocm-report=r.json"], files={"r.json": FOLDER}, expect="--rocm-report r.json: cannot write (r.json is a directory"),
    PytestCase("report-sidecar-fifo", ["--rocm-report=r.json"], files={"r.json.partial.jsonl": FIFO}, expect="cannot write (r.json.partial.jsonl is a FIFO"),
    PytestCase("report-variable-device", [], env={"PYTEST_ROCM_REPORT": "r.json"}, files={"r.json": DEVICE}, expect="PYTEST_ROCM_REPORT=r.json: cannot write (r.json is a character device"),
    PytestCase("report-variable-fifo", [], env={"PYTEST_ROCM_REPORT": "r.json"}, files={"r.json": FIFO}, expect="PYTEST_ROCM_REPORT=r.json: cannot write (r.json is a FIFO"),
    PytestCase("report-ini-fifo", [], ini="rocm_report = r.json", files={"r.json": FIFO}, expect="rocm_report in tox.ini=r.json: cannot write (r.json is a FIFO"),
    PytestCase("report-toml-folder", [], toml='[tool.pytest]\nrocm_report = "r.json"\n', files={"r.json": FOLDER}, expect="rocm_report in pyproject.toml=r.json: cannot write (r.json is a directory"),
    PytestCase("report-toml-number", [], toml="[tool.pytest]\nrocm_report = 5\n", expect="rocm_report in pyproject.toml=5: expected a string, not an integer"),
    PytestCase("gfx-toml-list", [], toml='[tool.pytest]\nrocm_gfx = ["gfx1100", "gfx11OO"]\n', expect="rocm_gfx in pyproject.toml='gfx1100,gfx11OO': bad architecture pattern 'gfx11OO'"),
    PytestCase("gfx-toml-ini-options-list", [], toml='[tool.pytest.ini_options]\nrocm_gfx = ["gfx11OO"]\n', expect="rocm_gfx in pyproject.toml='gfx11OO': bad architecture pattern 'gfx11OO'"),
    PytestCase("gfx-toml-string", [], toml='[tool.pytest]\nrocm_gfx = "gfx1100,gfx11OO"\n', expect="rocm_gfx in pyproject.toml='gfx1100,gfx11OO': bad architecture pattern 'gfx11OO'"),
    PytestCase("gfx-toml-number", [], toml="[tool.pytest]\nrocm_gfx = 1100\n", expect="rocm_gfx in pyproject.toml=1100: expected a string or a list of strings, not an integer"),
    PytestCase("gfx-ini-lines", [], ini="rocm_gfx =\n    gfx1100\n    gfx11OO", expect="rocm_gfx in tox.ini='gfx1100,gfx11OO': bad architecture pattern 'gfx11OO'"),
    PytestCase("gfx-toml-list-of-numbers", [], toml="[tool.pytest]\nrocm_gfx = [1100]\n", expect="rocm_gfx in pyproject.toml=[1100]: expected a string or a list of strings, not a list"),
    PytestCase("plan-rocm-toml-number", [], toml="[tool.pytest]\nrocm_plan_rocm = 6.2\n", expect="rocm_plan_rocm in pyproject.toml=6.2: expected a string, not a number (write rocm_plan_rocm = '6.2')"),
    PytestCase("label-toml-list", [], toml='[tool.pytest]\nrocm_label = ["a", "b"]\n', expect="rocm_label in pyproject.toml=['a', 'b']: expected a string, not a list"),
    PytestCase("require-gpu-toml-number", [], toml="[tool.pytest]\nrocm_require_gpu = 1\n", expect="rocm_require_gpu in pyproject.toml=1: expected a string, not an integer"),
    PytestCase("timeout-toml-number", ["-p", "pytest_timeout"], toml="[tool.pytest]\ntimeout = 5\n", expect="config option 'timeout' expects a string, got int: 5"),  # pytest's own words
    PytestCase("label-empty", ["--rocm-label="], expect="--rocm-label='': an empty label names nothing"),
    PytestCase("label-newline", ["--rocm-label=a\nb"], expect="--rocm-label='a\\nb': a label cannot contain control characters"),
    PytestCase("env-empty", ["--rocm-env="], expect="--rocm-env='': an empty path names no file"),
    PytestCase("env-fifo", ["--rocm-env=e.json"], files={"e.json": FIFO}, expect="--rocm-env: e.json: is a FIFO (named pipe), not a recorded environment"),
    PytestCase("env-device", ["--rocm-env=e.json"], files={"e.json": DEVICE}, expect="--rocm-env: e.json: is a character device"),
    PytestCase("env-folder", ["--rocm-env=e.json"], files={"e.json": FOLDER}, expect="--rocm-env: e.json: is a directory"),
    PytestCase("env-loop", ["--rocm-env=e.json"], files={"e.json": LOOP}, expect="--rocm-env: e.json: cannot read (Too many levels"),
    PytestCase("env-non-utf8", ["--rocm-env=e.json"], files={"e.json": b"\xff\xfe{}"}, expect="--rocm-env: e.json: not UTF-8 text (byte 0xff at offset 0)"),
    PytestCase("env-variable-non-utf8", [], env={"PYTEST_ROCM_ENV": "e.json"}, files={"e.json": b"{\xc3("}, expect="PYTEST_ROCM_ENV: e.json: not UTF-8 text"),
    PytestCase("env-bad-memory", ["--rocm-env=e.json"], files={"e.json": env_with(_set("devices.0.total_memory", -1))}, expect="--rocm-env: e.json: devices[0].total_memory is -1"),
    PytestCase("env-two-index-0", ["--rocm-env=e.json"], files={"e.json": env_with(_dup_device)}, expect="--rocm-env: e.json: devices: two entries have index 0"),
    PytestCase("env-torch-banana", ["--rocm-env=e.json"], files={"e.json": env_with(_set("torch", "banana"))}, expect="--rocm-env: e.json: torch is 'banana'"),
    PytestCase("timeout-nan", ["-p", "pytest_timeout", "--timeout", "nan"], expect="--timeout=nan: expected a finite number of seconds"),  # pytest-timeout's float
    PytestCase("timeout-inf", ["-p", "pytest_timeout", "--timeout=inf"], expect="--timeout=inf: expected a finite number of seconds"),
    PytestCase("timeout-negative", ["-p", "pytest_timeout", "--timeout", "-5"], expect="--timeout=-5.0: expected a finite number"),
    PytestCase("timeout-variable", ["-p", "pytest_timeout"], env={"PYTEST_TIMEOUT": "nan"}, expect="PYTEST_TIMEOUT='nan': expected a finite number"),
    PytestCase("timeout-ini", ["-p", "pytest_timeout"], ini="timeout = -1", expect="timeout in tox.ini='-1': expected a finite number"),
]  # fmt: skip


@pytest.mark.timeout(60)
@pytest.mark.parametrize("case", PYTEST_CASES, ids=[c.id for c in PYTEST_CASES])
def test_bad_plugin_input_is_one_usage_error_line(
    case: PytestCase, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTEST_PLUGINS", "pytest_rocm.plugin")
    for name in list(os.environ):
        if name.startswith("PYTEST_ROCM_") or name == "PYTEST_TIMEOUT":
            monkeypatch.delenv(name)
    monkeypatch.setenv("PYTEST_ROCM_SYSROOT", str(pytester.path))  # an empty machine
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    pytester.makepyfile(test_x="def test_a(): pass\n")
    if case.ini:
        pytester.makeini(f"[pytest]\n{case.ini}\n")
    if case.toml:
        pytester.makepyprojecttoml(case.toml)
    _make(pytester.path, case.files)
    before = snapshot(pytester.path)
    start = time.monotonic()
    result = pytester.runpytest("-p", "no:cacheprovider", *case.args)
    elapsed = time.monotonic() - start
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.outlines + result.errlines
    errors = [line for line in result.errlines if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("ERROR: "), errors
    assert case.expect in errors[0]
    assert not any("Traceback" in line or "INTERNALERROR" in line for line in result.outlines + result.errlines)
    assert elapsed < LIMIT_S
    assert snapshot(pytester.path) == before


# -- the whole class: a JSON value of the wrong type at any level of a report or a sidecar ---------
def _nodes(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into ``node`` (the first two items of a list; not into the embedded environment,
    which the environment cases above cover)."""
    found = [path] if path else []
    if path[:1] == ("environment",) and len(path) > 1:
        return found
    if isinstance(node, dict):
        items: list[tuple[Any, Any]] = list(node.items())
    elif isinstance(node, list):
        items = list(enumerate(node[:2]))
    else:
        items = []
    for key, value in items:
        found += _nodes(value, (*path, key))
    return found


def _rich_report() -> dict[str, Any]:
    """REPORT_GOOD with the optional parts a reader uses on its first record: perf, a known issue,
    attempts, the accelerator flag, a parity record's counts (shapes as docs/report.md gives them)."""
    document = copy.deepcopy(REPORT_GOOD)
    first = document["results"][0]
    first["perf"] = {
        "median_s": 0.001,
        "spread": 0.02,
        "reps": 5,
        "work": {"flops": 1e9},
        "throughput": 1e12,
        "unit": "FLOP/s",
        "peak_fraction": 0.01,
        "dtype": "float16",
        "backend": {"blas": "hipblaslt"},
    }
    first["info"] = {
        "issue": {"url": "https://github.com/pytorch/pytorch/issues/1", "seen_on": "rocm6.2", "fixed_in": "2.7"},
        "dims": {"m": 1},
    }
    first["attempts"], first["accelerator"] = 2, True
    first["parity"][0].update({"n_bad": 3, "numel": 10, "normwise_tol": 0.01, "name": "out"})
    document["scale"] = "ci"
    return document  # fmt: skip


#: one of each JSON type (a bool is an int to Python; -1 and [5] are cases of these for a reader)
WRONG_VALUES: list[Any] = [5, "x", [], {}, None]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("form", ["report", "sidecar"])
def test_a_wrong_value_anywhere_is_one_line_never_a_traceback(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rich = _rich_report()
    good = tmp_path / "good.json"
    good.write_text(json.dumps(rich))
    bad = tmp_path / ("bad.json" if form == "report" else "bad.json.partial.jsonl")
    for path in _nodes(rich):
        for value in WRONG_VALUES:
            document = copy.deepcopy(rich)
            node: Any = document
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = value
            bad.write_bytes(json.dumps(document).encode() if form == "report" else sidecar_of(document))
            # the sidecar's lines are read by the same loader: one command shows it (the report
            # form runs the comparison too, which reads every field)
            commands = [["table", str(bad)]] + ([["diff", str(good), str(bad)]] if form == "report" else [])
            for argv in commands:
                status = cli.main(argv)
                out, err = capsys.readouterr()
                where = f"{path} = {value!r}: {argv[0]}"
                assert status in (0, 1, 2), where
                assert "Traceback" not in out + err, where
                if status == 2:
                    lines = [line for line in err.splitlines() if line.strip()]
                    assert len(lines) == 1 and lines[0].startswith(f"rocm-compat {argv[0]}: {bad}: "), (where, lines)
