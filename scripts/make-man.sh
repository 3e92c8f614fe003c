#!/usr/bin/env bash
# Man pages from the CLI's own --help, by help2man: slowburn(8) and one
# slowburn-CMD(8) per command, so a page cannot drift from the code.
# Usage: make-man.sh BINARY OUTDIR VERSION
set -euo pipefail
bin=$(realpath "$1")
out=$2
version=$3
mkdir -p "$out/bin"
see_also=$(mktemp)
trap 'rm -f "$see_also"' EXIT
{
	echo "[SEE ALSO]"
	"$bin" completion commands | sed 's/.*/.BR slowburn-&  (8),/' | sed '$ s/,$//'
} >"$see_also"
help2man --no-info --section=8 --version-string="$version" --include="$see_also" \
	--name="name the straggler rank of a synchronised training job, and why" \
	--output="$out/slowburn.8" "$bin"
for cmd in $("$bin" completion commands); do
	wrapper="$out/bin/slowburn-$cmd"
	printf '#!/bin/sh\nexec %s %s "$@"\n' "$bin" "$cmd" >"$wrapper"
	chmod +x "$wrapper"
	# The command's first sentence names it.
	# sed -n 1p reads to the end: head would close the pipe early (SIGPIPE, 141 under pipefail).
	name=$("$bin" "$cmd" --help | sed -n -e '1s/[.:;] .*//' -e '1s/\.$//' -e 1p)
	# Each page points back at the map, and at the other commands.
	{
		echo "[SEE ALSO]"
		echo ".BR slowburn (8),"
		"$bin" completion commands | grep -vx "$cmd" | sed 's/.*/.BR slowburn-&  (8),/' | sed '$ s/,$//'
	} >"$see_also"
	help2man --no-info --section=8 --version-string="$version" --name="$name" --include="$see_also" \
		--output="$out/slowburn-$cmd.8" "$wrapper"
done
