"""The speed block (``table.speed``) as HTML for the page ``table.html`` renders: per headline
row and column the throughput, % of peak, backend, the noisy mark and a slowdown, with a bar
(one column: the fraction of the device's peak; several: of the row's fastest column)."""

from __future__ import annotations

from html import escape
from typing import Any

from pytest_rocm.table.model import Table
from pytest_rocm.table.speed import speed_block


def _attr(text: Any) -> str:
    return escape(str(text), quote=True)


def speed_block_html(table: Table) -> str:
    """The speed block (``table.speed``): per headline row and column the throughput, % of peak,
    backend and the noisy mark, with a bar (one column: of the device's peak; else of the fastest)."""
    block = speed_block(table)
    if block is None:
        return ""
    what = (
        "bars: fraction of the device's published peak"
        if block.bars == "peak"
        else "bars: each column against the row's fastest"
    )
    # the label alone (the summary beside it has the whole header: scale, subset)
    head = "".join(f'<th title="{_attr(table.column(label))}">{_attr(label)}</th>' for label in table.labels)
    body = []
    for entry in block.entries:
        cells = []
        for label in table.labels:
            figure, bar = entry.figures.get(label), entry.bars.get(label)
            if figure is None:
                cells.append(
                    f'<td class="speed-cell missing" data-label="{_attr(label)}">{_attr(entry.missing.get(label, ""))}</td>'
                )
                continue
            noisy = " noisy" if figure.noisy else ""
            strip = f'<span class="bar{noisy}" style="width:{bar * 100:.1f}%"></span>' if bar is not None else ""
            extra = "".join(
                f" · <span class={name}>{_attr(text)}</span>"
                for name, text in (
                    ("peak", figure.peak),
                    ("backend", figure.backend),
                    ("noisy", figure.noisy),
                    ("slower", figure.slower and f"\u25bc {figure.slower}"),
                )
                if text
            )
            variant = f" <span class=variant>({_attr(figure.shown_variant)})</span>" if figure.shown_variant else ""
            cells.append(
                f'<td class="speed-cell{noisy}" data-label="{_attr(label)}" data-feature="{_attr(figure.feature)}">'
                f"<span class=tp>{_attr(figure.throughput)}</span>{variant}{extra}{strip}</td>"
            )
        body.append(
            f'<tr class=speed-row data-suite="{_attr(entry.suite)}"><th>{_attr(entry.title)}</th>{"".join(cells)}</tr>'
        )
    more = (
        f"<p class=speed-more>{block.more} more measured operations: see the throughput chart</p>" if block.more else ""
    )
    what = block.note or what
    return (
        # beside the summary while it fits; a wide block (several columns) takes the width under it
        f'<section id=speed style="min-width:min(100%,{240 + 240 * len(table.labels)}px)">'
        f"<h2>Speed</h2><p class=speed-what>{_attr(what)}</p>"
        f"<table id=speed-table><thead><tr><th>measured</th>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        f"{more}</section>"
    )
