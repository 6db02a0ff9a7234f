"""Running ``rocm-compat setup``: judge the torch, pick where the build comes from (the doctor's
index, else the configured index's fitting build when that one is unreachable), then run the pip
commands through the seam, each shown before it runs.

Exit statuses: 0 done (or printed, with ``dry_run``); 1 refused or impossible (a torch that does
not fit without ``replace_torch``, no reachable torch build that fits, a pip call that failed).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_rocm.doctor.facts import Build, torch_source
from pytest_rocm.doctor.model import Extras
from pytest_rocm.env.model import Environment
from pytest_rocm.setup import plan
from pytest_rocm.setup.torch_fit import build_of, installed_build, judge_torch, newest_fitting

PROG = "rocm-compat setup"
#: what the one line says instead of a version, in a dry run that installs torch first
INSTALLED_ABOVE = "VERSION-INSTALLED-ABOVE"


@dataclass(frozen=True)
class Options:
    target: str = "suites"
    dry_run: bool = False
    replace_torch: bool = False
    #: the index to take torch from instead of this machine's (never a fallback from it)
    index_url: str | None = None
    python: str = "python"
    #: the environment is a recording of another machine (``--env``): a plan for it, run nowhere
    recorded: bool = False

    @property
    def plan_only(self) -> bool:
        """Nothing runs (no pip) and nothing is contacted (no index probed): print the plan."""
        return self.dry_run or self.recorded


Say = Callable[[str], None]


def setup(env: Environment, extras: Extras, options: Options, seam: Any, say: Say) -> int:
    if seam.distribution_version("pip") is None:
        say(
            f"{PROG}: this environment ({options.python}) has no pip (a uv venv?): `{options.python} -m ensurepip`, "
            "or with uv: uv pip install torch --torch-backend=auto (docs/install.md)"
        )
        return 1
    requires = seam.requirements(plan.DISTRIBUTION)
    if requires is None:  # checked before torch is touched: the extras are read from its metadata
        say(
            f"{PROG}: {plan.DISTRIBUTION} is not installed in this environment ({options.python}): pip install -e . first"
        )
        return 1
    verdict = judge_torch(env, extras)
    say(f"{PROG}: {verdict.text}")
    torch_steps: list[list[str]] = []
    build: Build = installed_build(env)
    if verdict.state == "misfit":
        say(f"{PROG}: fix: {verdict.fix}")
        if not options.replace_torch:
            say(
                f"{PROG}: not replaced; rerun with --replace-torch to uninstall it and install the build for this machine"
            )
            return 1
        torch_steps.append(plan.torch_uninstall(options.python))
    if verdict.state != "fits":
        chosen = choose_torch(env, extras, options, seam, say)
        if chosen is None:
            return 1
        command, build = chosen
        torch_steps.append(command)
    for command in torch_steps:
        if not _run(command, options, seam, say):
            return 1
    wanted = [*plan.extra_requirements(requires, plan.TARGETS[options.target]), *plan.companions(build)]
    command = plan.extras_install(options.python, wanted, _kept_torch(env, options, seam, bool(torch_steps)))
    if not _run(command, options, seam, say):
        return 1
    if options.recorded:
        say(f"{PROG}: a plan for the recorded machine (--env): nothing was run or contacted here")
    elif not options.dry_run:
        say(f"{PROG}: done ({options.target}); torch {seam.distribution_version('torch')}")
    return 0


def _kept_torch(env: Environment, options: Options, seam: Any, installs_torch: bool) -> str:
    """The torch version the extras are pinned to: the one installed above (known only after it
    ran), the recorded machine's own (``--env``), else this environment's."""
    if installs_torch and options.plan_only:
        return INSTALLED_ABOVE
    if options.recorded:  # Environment.load checked it is a PEP 440 version
        return env.torch or INSTALLED_ABOVE
    return seam.distribution_version("torch") or INSTALLED_ABOVE


def choose_torch(
    env: Environment, extras: Extras, options: Options, seam: Any, say: Say
) -> tuple[list[str], Build] | None:
    """The torch install command and the build it brings; None (said why) when there is none."""
    source = torch_source(env, extras)
    if options.index_url:
        return _reachable_or_none(options.index_url, source.build, options, seam, say)
    if source.note:
        say(f"{PROG}: torch from {source.url} ({source.note})")
    if options.plan_only:
        say(
            f"{PROG}: {source.url} not contacted (a plan touches no index); were it unreachable, setup would look "
            f"for a {source.build} torch on the configured package index"
        )
        return plan.torch_install(options.python, source.url), source.build
    error = seam.url_error(_probe_url(source.url))
    if error is None:
        return plan.torch_install(options.python, source.url), source.build
    say(
        f"{PROG}: {source.url} is unreachable ({error}); looking for a {source.build} torch on the configured package index"
    )
    code, out = seam.capture(plan.pip(options.python, "index", "versions", "torch"))
    version = newest_fitting(index_versions(out), source.build, env) if code == 0 else None
    if version is None:
        say(
            f"{PROG}: no {source.build} torch that fits this machine on the configured package index either: "
            f"make {source.url} reachable (HTTPS_PROXY), or name an index or mirror that serves the build with --index-url"
        )
        return None
    say(f"{PROG}: the configured package index serves torch {version} ({source.build} build): taking it")
    return plan.torch_install(options.python, None, version), source.build


def _reachable_or_none(
    url: str, fallback: Build, options: Options, seam: Any, say: Say
) -> tuple[list[str], Build] | None:
    """The user's own index: taken as given when it answers (its last path part names the build:
    ``cpu``, ``cu130``, ``rocm6.4``), never swapped for another when it does not."""
    error = None if options.plan_only else seam.url_error(_probe_url(url))
    if error is not None:
        say(
            f"{PROG}: the index given by --index-url, {url}, is unreachable ({error}): make it reachable, or leave --index-url out"
        )
        return None
    build = build_of("+" + url.rstrip("/").rsplit("/", 1)[-1]) if "/" in url else None
    return plan.torch_install(options.python, url), build or fallback


def _probe_url(index: str) -> str:
    """The project page of torch on a PEP 503 index: what pip asks for first."""
    return index.rstrip("/") + "/torch/"


def index_versions(text: str) -> list[str]:
    """The versions of ``pip index versions torch`` (``Available versions: 2.14.1, 2.13.0+cpu``)."""
    for line in text.splitlines():
        head, _, rest = line.partition(":")
        if head.strip() == "Available versions":
            return [v.strip() for v in rest.split(",") if v.strip()]
    return []


def _run(command: Sequence[str], options: Options, seam: Any, say: Say) -> bool:
    """Show a pip call, then run it (pip's own output passes through); False when it failed."""
    say(f"$ {shlex.join(command)}")
    if options.plan_only:
        return True
    code: int = seam.run(command)
    if code != 0:
        say(f"{PROG}: pip exited with status {code} at: {shlex.join(command)}")
    return code == 0
