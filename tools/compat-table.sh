#!/bin/bash
# Print the compatibility table of the README ("Real programs on kq") from
# what the scripts measured in this run, and check the README against it:
# each script writes one row (program, what ran, result on kq, result on
# the program's epoll backend) to build/clients/<name>-summary.tsv or
# build/deb/summary.tsv.  The README must have a row for the program, and
# the run's kq result must have no more failures than epoll's (the script's
# own step already failed if kq failed what epoll passed).  Counts that differ from the
# README's (a test skipped here, an epoll test that flaked) are printed as
# a note to refresh the README, not a failure: a red CI for a sentence
# would say nothing about kq.  A missing summary (its script did not run)
# is a failure.  Ends with "compat: N passed, M failed".
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
	if [ -z "$row" ]; then
		ok=0
		echo "compat: FAILED: the README has no row for $prog"
	fi
	kf=$(echo "$kq" | sed -n 's/.* \([0-9][0-9]*\) failed.*/\1/p')
	ef=$(echo "$ep" | sed -n 's/.* \([0-9][0-9]*\) failed.*/\1/p')
	if [ -z "$kf" ] || [ "$kf" -gt "${ef:-0}" ]; then
		ok=0
		echo "compat: FAILED: $prog on kq: $kq (epoll: $ep)"
	fi
	for cell in "$ran" "$kq" "$ep"; do
		[ "$cell" = - ] && continue
		case $row in *"$cell"*) ;; *) echo "compat: note: README's row for $prog does not say \"$cell\" (refresh it)" ;; esac
	done
	[ $ok = 1 ] && pass=$((pass + 1)) || fail=$((fail + 1))
done
echo "compat: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
