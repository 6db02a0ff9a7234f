"""Terminal output is data too: what the doctor quotes from an Ollama log (or a recorded
environment, or a path) reaches the terminal with its control characters and bidi overrides
written out, in every format, through the one rule of report/escape.py."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_rocm import cli
from pytest_rocm.doctor.checks import Check
from pytest_rocm.report.escape import terminal_line

DATA = Path(__file__).parent.parent / "data"
ENVS = DATA / "envs"
#: a raw control character or bidi override a terminal would act on (newline aside: checked per line)
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")

#: hostile payloads inside otherwise real Ollama lines: clear the screen, set the title, an OSC 8
#: link, a C1 CSI, a bidi override that reverses what follows, a carriage return that overwrites
HOSTILE = [
    "\x1b[2J\x1b[H",
    "\x1b]0;pwned\x07",
    "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\",
    "\x9b31m",
    "\u202egnp.exe",
    "\r[ok  ] all good",
    "\u2066isolated\u2069",
]


def hostile_log(tmp_path: Path, payload: str) -> Path:
    lines = [
        'time=2025-03-01T11:37:39.547+02:00 level=INFO source=routes.go:1 msg="Listening on 127.0.0.1:11434 '
        f'(version 0.5.12{payload})"',
        'time=2025-03-01T11:37:39.549+02:00 level=WARN source=amd_linux.go:376 msg="amdgpu is not supported '
        f'(supported types:[gfx1030 gfx1100])" gpu_type=gfx1031{payload} gpu=0 library=/usr/lib/ollama{payload}',
        f'time=2025-03-01T11:37:39.549+02:00 level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered{payload}"',
        f'time=2025-03-01T11:37:39.549+02:00 level=INFO source=gpu.go:377 msg="no compatible GPUs were discovered" x="{payload}"',
    ]
    path = tmp_path / "server.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("payload", HOSTILE)
def test_text_output_has_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str) -> None:
    log = hostile_log(tmp_path, payload)
    cli.main(["doctor", "--env", str(ENVS / "rx6700xt_override.json"), "--ollama-log", str(log)])
    out = capsys.readouterr().out
    assert "ollama-gpu" in out and "runs models on the CPU" in out  # the log was read, and quoted
    for line in out.splitlines():
        assert not RAW.search(line), repr(line)
    if len(f"a{payload}b".splitlines()) == 1:  # a line break ends the log's line: nothing to show
        assert terminal_line(payload) in out  # shown, written out: the reader sees what was there


@pytest.mark.parametrize("payload", HOSTILE)
def test_json_output_carries_no_raw_control(tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str) -> None:
    """JSON escapes controls on the wire, but a consumer prints the decoded value: it must be safe too."""
    log = hostile_log(tmp_path, payload)
    cli.main(["doctor", "--json", "--env", str(ENVS / "rx6700xt_override.json"), "--ollama-log", str(log)])
    checks = json.loads(capsys.readouterr().out)["checks"]
    quoted = [c for c in checks if c["id"] == "ollama-gpu"]
    assert quoted and (len(f"a{payload}b".splitlines()) > 1 or terminal_line(payload) in quoted[0]["evidence"])
    for check in checks:
        for value in (check["evidence"], check["fix"] or ""):
            assert not RAW.search(value) and "\n" not in value, value


def test_a_hostile_path_in_the_error_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "no\x1b[2Jsuch\u202e.log"
    assert cli.main(["doctor", "--env", str(ENVS / "rx6700xt_override.json"), "--ollama-log", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not RAW.search(err.rstrip("\n")) and "\\x1b[2J" in err


def test_a_check_is_one_line_whatever_it_quotes() -> None:
    check = Check("x", "warn", "seen: a\nb\u2028c\x1b[0m", fix="run\n[ok  ] y")
    assert check.line == "[WARN] x: seen: a\\x0ab\\u2028c\\x1b[0m" and check.fix == "run\\x0a[ok  ] y"
    assert Check("x", "ok", check.evidence).evidence == check.evidence  # escaping twice changes nothing
