"""The atlas' file names: one page per gfx and per library or suite, no two alike (a name that had
to be changed for a file name never takes another's page; a disk that ignores case is counted with)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

from pytest_rocm.atlas.model import Atlas, library_of


def page_name(text: str) -> str:
    """A file name for a gfx or library: ``gfx942``, ``bitsandbytes`` as they are; a name that had
    to be changed (``lib/a``) gets a digest of itself (``lib-a-3f2c9e1d``), so it never takes the
    page of the name it was changed into (``lib-a``)."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "unnamed"
    if safe == text:
        return safe
    return f"{safe}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def page_names(texts: Iterable[str]) -> dict[str, str]:
    """A page name per text, no two alike even where case is ignored (a macOS or Windows disk):
    :func:`page_name`, and where two still meet (``Lib`` and ``lib``, or a name made to look like
    another's digest) ``-2``, ``-3``... in sorted order (names kept as they are first), so a site
    built twice names alike."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for text in sorted(set(texts), key=lambda t: (page_name(t) != t, t)):
        name, n = page_name(text), 1
        while (name if n == 1 else f"{name}-{n}").casefold() in taken:
            n += 1
        chosen = name if n == 1 else f"{name}-{n}"
        taken.add(chosen.casefold())
        out[text] = chosen
    return out


def gfx_pages(atlas: Atlas) -> dict[str, str]:
    """gfx -> its page's file name (without ``.html``)."""
    return page_names(atlas.gfx_list())


def library_pages(atlas: Atlas) -> dict[str, str]:
    """library or suite -> its page's file name (without ``.html``)."""
    return page_names({library_of(s, f) for s, f in atlas.rows})
