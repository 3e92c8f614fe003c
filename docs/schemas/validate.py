#!/usr/bin/env python3
"""Validate slowburn's JSON lines against docs/schemas/<kind>.schema.json.

    python3 docs/schemas/validate.py [--require-kinds k1,k2] [--as KIND] FILE|-

Each line is parsed as JSON and checked against the schema named by its
"kind" field (JSON Schema draft 2020-12, with the jsonschema module). One
line is printed per failure ("line N kind K: message at path"); a line that
is not JSON, has no "kind", or whose kind has no schema is a failure too.
The last line says how many lines were validated and which kinds were seen.

--require-kinds: fail unless every kind listed was seen at least once.
--as KIND: check every line against KIND's schema whatever its "kind" field
says.

Exit status: 0 every line is valid and every required kind was seen, 1
otherwise, 2 a usage error (no such file, no such schema for --as).
Needs only the standard library and jsonschema (Debian: python3-jsonschema).
"""

import argparse
import json
import os
import sys

try:
    import jsonschema
except ImportError:  # pragma: no cover - said plainly rather than as a traceback
    sys.stderr.write("validate.py: needs the jsonschema module (apt install python3-jsonschema)\n")
    sys.exit(2)

SCHEMA_DIR = os.path.dirname(os.path.abspath(__file__))


def schema_path(kind):
    return os.path.join(SCHEMA_DIR, kind + ".schema.json")


class Validators:
    """One validator per kind, loaded the first time the kind is seen."""

    def __init__(self):
        self._by_kind = {}

    def get(self, kind):
        if kind not in self._by_kind:
            path = schema_path(kind)
            # A kind is a file name only when it is a plain word: no path tricks.
            if not kind or os.sep in kind or kind.startswith(".") or not os.path.isfile(path):
                self._by_kind[kind] = None
            else:
                with open(path, encoding="utf-8") as f:
                    schema = json.load(f)
                jsonschema.Draft202012Validator.check_schema(schema)
                self._by_kind[kind] = jsonschema.Draft202012Validator(schema)
        return self._by_kind[kind]


def where(error):
    path = "".join("[%d]" % p if isinstance(p, int) else "." + str(p) for p in error.absolute_path)
    return "$" + path


def messages(error):
    """The deepest errors of an if/then/anyOf tree: the ones that name the field."""
    if error.context:
        # anyOf / oneOf: the branch that got furthest says the most; of a
        # null-or-object field, what the object lacks, not that it is no null.
        context = [e for e in error.context if e.validator != "type"] or list(error.context)
        depth = max(len(e.absolute_path) for e in context)
        for e in context:
            if len(e.absolute_path) == depth:
                yield from messages(e)
        return
    yield error


def short(value, limit=120):
    text = value if isinstance(value, str) else json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def validate_stream(stream, validators, as_kind, out):
    failures = 0
    lines = 0
    seen = {}
    for number, raw in enumerate(stream, 1):
        raw = raw.strip()
        if not raw:
            continue
        lines += 1
        try:
            line = json.loads(raw)
        except ValueError as e:
            out.write("line %d: not JSON: %s\n" % (number, e))
            failures += 1
            continue
        if not isinstance(line, dict):
            out.write("line %d: not a JSON object: %s\n" % (number, short(line)))
            failures += 1
            continue
        kind = line.get("kind")
        if as_kind is None:
            if not isinstance(kind, str):
                out.write("line %d: no \"kind\" (a string): %s\n" % (number, short(raw)))
                failures += 1
                continue
            seen[kind] = seen.get(kind, 0) + 1
            schema_kind = kind
        else:
            seen[as_kind] = seen.get(as_kind, 0) + 1
            schema_kind = as_kind
        validator = validators.get(schema_kind)
        if validator is None:
            out.write("line %d kind %s: no schema (%s)\n" % (number, kind, schema_path(schema_kind)))
            failures += 1
            continue
        errors = sorted(validator.iter_errors(line), key=lambda e: list(e.absolute_path))
        reported = set()
        for error in errors:
            for e in messages(error):
                text = "line %d kind %s: %s at %s" % (number, kind, short(e.message, 300), where(e))
                if text not in reported:
                    reported.add(text)
                    out.write(text + "\n")
        if errors:
            failures += 1
    return lines, failures, seen


def main(argv=None):
    parser = argparse.ArgumentParser(description="Validate slowburn JSON lines against docs/schemas.")
    parser.add_argument("file", help="a file of JSON lines, or - for stdin")
    parser.add_argument("--require-kinds", default="", metavar="K1,K2",
                        help="fail unless each of these kinds is seen at least once")
    parser.add_argument("--as", dest="as_kind", metavar="KIND",
                        help="check every line against KIND's schema")
    args = parser.parse_args(argv)

    validators = Validators()
    if args.as_kind is not None and validators.get(args.as_kind) is None:
        sys.stderr.write("validate.py: --as %s: no schema %s\n" % (args.as_kind, schema_path(args.as_kind)))
        return 2
    required = [k for k in (k.strip() for k in args.require_kinds.split(",")) if k]

    out = sys.stdout
    try:
        if args.file == "-":
            lines, failures, seen = validate_stream(sys.stdin, validators, args.as_kind, out)
        else:
            with open(args.file, encoding="utf-8") as stream:
                lines, failures, seen = validate_stream(stream, validators, args.as_kind, out)
    except BrokenPipeError:
        raise
    except OSError as e:
        sys.stderr.write("validate.py: %s\n" % e)
        return 2

    missing = [k for k in required if k not in seen]
    for k in missing:
        out.write("kind %s: required (--require-kinds) but not seen\n" % k)
    kinds = ", ".join("%s %d" % (k, n) for k, n in sorted(seen.items())) or "none"
    out.write("validated %d lines: %d invalid; kinds %s\n" % (lines, failures, kinds))
    return 0 if failures == 0 and not missing else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        sys.stderr.close()
        sys.exit(1)
