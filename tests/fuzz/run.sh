#!/bin/sh
# Runs each libFuzzer harness for SECONDS seconds (make fuzz FUZZ_SECONDS=N)
# and prints, per harness, the executions, the corpus size and the findings.
#   tests/fuzz/run.sh SECONDS HARNESS...      (HARNESS: build/fuzz/fuzz_NAME)
# The committed seeds in tests/fuzz/corpus/NAME/ are read, never written:
# what a run discovers goes to build/fuzz/corpus/NAME/, and every crash, leak,
# timeout or out-of-memory input to build/fuzz/findings/NAME/. Exits 1 when
# any harness has a finding.
set -u
seconds=$1; shift
status=0
summary=""
for harness in "$@"; do
    name=${harness##*/fuzz_}
    work=build/fuzz/corpus/$name findings=build/fuzz/findings/$name log=build/fuzz/$name.log
    rm -rf "$findings"; mkdir -p "$work" "$findings"
    echo "== fuzz_$name: $seconds s, seeds tests/fuzz/corpus/$name/, log $log =="
    # -timeout: an input taking 10 s counts as a hang; -rss_limit_mb: 2 GiB as too much memory.
    OPENBLAS_NUM_THREADS=1 \
    ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=0 \
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        "$harness" "$work" "tests/fuzz/corpus/$name" -max_total_time="$seconds" -timeout=10 \
        -rss_limit_mb=2048 -max_len=4096 -print_final_stats=1 -artifact_prefix="$findings/" >"$log" 2>&1
    code=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    found=$(find "$findings" -type f | wc -l)
    corpus=$(find "$work" -type f | wc -l)
    line="fuzz_$name: ${runs:-?} executions in $seconds s, corpus $corpus inputs, findings $found (exit $code)"
    echo "$line"
    grep -h "^fuzz_$name: " "$log" | tail -n 1  # a harness's own counts, if it prints them
    summary="$summary$line
"
    if [ "$code" -ne 0 ] || [ "$found" -ne 0 ]; then
        status=1
        grep -m 3 -E 'ERROR: |SUMMARY: |runtime error' "$log"
        find "$findings" -type f | sed 's/^/  finding: /'
    fi
done
printf '== fuzz summary ==\n%s' "$summary"
exit $status
