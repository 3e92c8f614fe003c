#!/usr/bin/env python3
"""Check the real tracefs `format` files a kernel printed (OUT/formats, copied
by guest/formats.sh) against tests/fixtures/tracefs: each must have the
fields (name, type, offset, size, signedness) of one fixture of that event.
Appends SB-RESULT lines to OUT/results.
  formats.py OUT FIXTURE_DIR"""
import pathlib
import re
import sys

FIELD = re.compile(r"field:(?P<decl>[^;]+);\s*offset:(?P<offset>\d+);\s*size:(?P<size>\d+);\s*signed:(?P<signed>\d+);")


def fields(path):
    """The event's own fields (not common_*), as comparable tuples."""
    found = []
    for m in FIELD.finditer(pathlib.Path(path).read_text()):
        decl = " ".join(m["decl"].split())
        if decl.split()[-1].startswith("common_"):
            continue
        found.append((decl, int(m["offset"]), int(m["size"]), int(m["signed"])))
    return found


def main():
    out, fixture_dir = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    lines = []
    for real in sorted((out / "formats").glob("*.format")):
        event = real.name[: -len(".format")]
        mine = fields(real)
        candidates = sorted(fixture_dir.glob(event + ".*.format"))
        same = [c.name for c in candidates if fields(c) == mine]
        name = "format." + event
        if not candidates:
            lines.append("SKIP %s - no fixture of %s to compare (%d fields)" % (name, event, len(mine)))
        elif same:
            lines.append("PASS %s - the real format has the fields of %s" % (name, ", ".join(same)))
        else:
            lines.append("FAIL %s - the real format matches none of %s: fields %s" % (
                name, ", ".join(c.name for c in candidates), mine))
    with open(out / "results", "a") as f:
        for line in lines:
            print("SB-RESULT " + line)
            f.write("SB-RESULT " + line + "\n")


if __name__ == "__main__":
    main()
