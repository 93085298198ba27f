"""Reading a ddlab report as a person would, by its landmarks (a helper, not a test
module): the stable element ids every report has (ddlab.report.html.IDS), in order."""

from __future__ import annotations

import re

IDS = ["ddlab-verdict", "ddlab-provenance", "ddlab-table", "ddlab-figures"]


def landmarks(html: str) -> list[str]:
    """The report ids in the order they appear (each may appear once at most)."""
    found = {}
    for name in IDS:
        hits = [m.start() for m in re.finditer(f"id=['\"]{name}['\"]", html)]
        assert len(hits) <= 1, f"{name} appears {len(hits)} times"
        if hits:
            found[name] = hits[0]
    return sorted(found, key=found.get)


def first_in_body(html: str) -> str:
    """The attributes of the first element inside <body>."""
    body = html[html.index("<body"):]
    return re.search(r"<body[^>]*>\s*<(\w+)([^>]*)>", body).group(2)


def section(html: str, name: str, until: str | None = None) -> str:
    """The html from landmark ``name`` to landmark ``until`` (default: the end)."""
    start = re.search(f"id=['\"]{name}['\"]", html).start()
    end = re.search(f"id=['\"]{until}['\"]", html).start() if until else len(html)
    return html[start:end]


def figures_block(html: str) -> str:
    """The ddlab-figures block, to its closing tag."""
    block = section(html, "ddlab-figures")
    return block[:block.index("</div>")]
