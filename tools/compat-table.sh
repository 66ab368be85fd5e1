#!/bin/bash
# Print the compatibility table of the README ("Real programs on kq") from
# what the scripts measured in this run, and check the README against it:
# each script writes one row (program, what ran, result on kq, result on
# the program's epoll backend) to build/clients/<name>-summary.tsv or
# build/deb/summary.tsv, and the README's row for that program must
# contain those cells word for word, so a number in the README that no
# longer holds fails CI.  A missing summary (its script did not run) is a
# failure.  Ends with "compat: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
pass=0 fail=0
files="build/deb/summary.tsv build/clients/redis-summary.tsv build/clients/lighttpd-summary.tsv"
printf '%-20s | %-48s | %-22s | %s\n' program "what ran" "kq" "epoll"
for f in $files; do
	if [ ! -s "$f" ]; then
		echo "compat: FAILED: no $f (its script did not run)"
		fail=$((fail + 1))
		continue
	fi
	IFS=$'\t' read -r prog ran kq ep <"$f"
	printf '%-20s | %-48s | %-22s | %s\n' "$prog" "$ran" "$kq" "$ep"
	row=$(grep -F "| $prog" README.md | head -1)
	ok=1
	for cell in "$ran" "$kq" "$ep"; do
		[ "$cell" = - ] && continue
		case $row in *"$cell"*) ;; *) ok=0; echo "compat: FAILED: README's row for $prog does not say \"$cell\"" ;; esac
	done
	[ $ok = 1 ] && pass=$((pass + 1)) || fail=$((fail + 1))
done
echo "compat: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
