"""docs/kernel-support.md has one section that `make test-nodes` writes
(NODES_HEADER) and the matrix's table.py keeps when it rewrites the rest."""

NODES_HEADER = "## Across nodes (`make test-nodes`)"


def section(text, header):
    """The section under `header` to the next `## ` heading, or ""."""
    if header not in text:
        return ""
    start = text.index(header)
    end = text.find("\n## ", start + len(header))
    return text[start:] if end < 0 else text[start:end + 1]


def put_section(text, header, body):
    """`text` with the section under `header` replaced by `body` (appended when absent)."""
    old = section(text, header)
    if old:
        return text.replace(old, body.rstrip("\n") + "\n\n" if not text.endswith(old) else body.rstrip("\n") + "\n")
    return text.rstrip("\n") + "\n\n" + body.rstrip("\n") + "\n"
