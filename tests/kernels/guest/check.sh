# slowburn check --json: the feature rows of this kernel, kept for the table.
"$SB" check --json >"$OUT/check.jsonl" 2>"$OUT/check.err"
rc=$?
if [ $rc -eq 0 ]; then
	pass check "every required row ok ($(grep -c '"ok":true' "$OUT/check.jsonl") of $(wc -l <"$OUT/check.jsonl") rows ok)"
else
	fail check "exit $rc: $(grep '"ok":false,"required":true' "$OUT/check.jsonl" | cut -c1-300)"
fi
