# Shared by the end-to-end scripts (source it): pass/fail counters, the Python that has torch,
# and the closing line. A script ends with `finish NAME`, which exits non-zero on any failure.
fails=0
passed=0
bad() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { passed=$((passed + 1)); }
py() { /usr/bin/python3 -c "$@"; }
finish() {
  echo "$1: $passed passed, $fails failed"
  [[ $fails -eq 0 ]]
}
