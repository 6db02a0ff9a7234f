"""``--rocm-workload=FILE``: a captured workload's signatures as rows ``workload/<op>[<id>]``.

The file is read and validated when pytest configures (a bad one is a usage error naming the
file and the field); its rows are added to the collected tests under a ``workload`` node, so
``-k``, ``-m``, xdist and the report treat them as any test. With no test paths on the command
line, the run is the workload alone (nothing else is collected); named paths run as well. Each
row replays one signature (``workload.replay``): its info carries the readable signature, the
call count (the table sorts by it), the phase and which reference was used; its parity records
are the comparisons. With ``--rocm-workload-perf`` each row also times its device call and
records it as the row's ``perf``. torch is imported only when a row runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_rocm.plugin.perf import BUDGETS
from pytest_rocm.plugin.scale import get_scale
from pytest_rocm.plugin.session import device_string, get_state
from pytest_rocm.report.properties import INFO_PROPERTY, PERF_PROPERTY
from pytest_rocm.workload.limits import DEFAULT_MAX_BYTES
from pytest_rocm.workload.schema import WorkloadError, load_workload
from pytest_rocm.workload.signature import signature_text

_DOCUMENT = pytest.StashKey[dict[str, Any]]()
#: the node every row hangs from: rows are ``workload::<op>[<id>]``, named ``workload/<op>[<id>]``
NODE = "workload"


def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "help", False):
        return
    settings = get_state(config).settings
    if settings.workload is None:
        return
    try:
        config.stash[_DOCUMENT] = load_workload(settings.workload)
    except WorkloadError as exc:
        raise pytest.UsageError(f"{settings.workload_source}: {exc}") from None


def _workload_only(config: pytest.Config) -> bool:
    return _DOCUMENT in config.stash and config.args_source != pytest.Config.ArgsSource.ARGS


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """A workload run with no paths named collects nothing else (not even the rootdir's tests)."""
    return True if _workload_only(config) else None


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselect: they select rows too
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    document = config.stash.get(_DOCUMENT, None)
    if document is not None:
        node = WorkloadNode.from_parent(session, name=NODE, nodeid=NODE, document=document)
        rows = list(node.collect())
        # counted where pytest counts what it collected ("collected 87 items", --co's summary)
        config.hook.pytest_collectreport(report=pytest.CollectReport(NODE, "passed", None, list(rows)))
        items.extend(rows)


class WorkloadNode(pytest.Collector):
    def __init__(self, *, document: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.document = document

    def collect(self) -> Iterator[WorkloadRow]:
        for signature in self.document["signatures"]:
            yield WorkloadRow.from_parent(self, name=f"{signature['op']}[{signature['id']}]", signature=signature)


def captured_text(document: Mapping[str, Any]) -> str:
    """``torch 2.6.0+cu124 on NVIDIA H100 (sm_90)``"""
    on = document["captured_on"]
    device = on.get("device") or on["backend"]
    return f"torch {on['torch']} on {device}" + (f" ({on['arch']})" if on.get("arch") else "")


class WorkloadRow(pytest.Item):
    def __init__(self, *, signature: Mapping[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.signature = signature

    def runtest(self) -> None:
        import torch

        from pytest_rocm.parity.result import announce, failure_message
        from pytest_rocm.workload.replay import DeviceFailed, NotReplayable, replay

        settings = get_state(self.config).settings
        document = self.config.stash[_DOCUMENT]
        info: dict[str, Any] = {
            "signature": signature_text(self.signature),
            "calls": self.signature["calls"],
            "phase": self.signature["phase"],
            "captured_on": captured_text(document),
        }
        self.user_properties.append((INFO_PROPERTY, info))
        device = torch.device(device_string(self.config))
        budget = BUDGETS[get_scale(self.config)] if settings.workload_perf else None
        limit = settings.workload_max_bytes or DEFAULT_MAX_BYTES
        try:
            replayed = replay(self.signature, device, perf=budget, max_bytes=limit)
        except NotReplayable as exc:
            info["not_replayable"] = str(exc)
            pytest.skip(f"not replayable: {exc}")
        except DeviceFailed as exc:
            pytest.fail(f"{info['signature']}: {exc}", pytrace=False)
        info.update(reference=replayed.reference, regimes=replayed.regimes, backward=replayed.backward)
        if replayed.notes:  # a capture of another vendor's op, replayed as what this build runs
            info["replayed_as"] = "; ".join(replayed.notes)
        if replayed.perf is not None:
            self.user_properties.append((PERF_PROPERTY, json.loads(json.dumps(replayed.perf))))
        announce(replayed.result)
        if replayed.result.failures:
            pytest.fail(
                failure_message(replayed.result, advice=False), pytrace=False
            )  # no assert_parity call to change

    def reportinfo(self) -> tuple[str, int | None, str]:
        return NODE, None, f"{NODE}/{self.name}"
