#!/usr/bin/env bash
# The shipped library holds no test code: nothing of testing/ (namespace
# valet::testing: synthetic models, the GGUF writer, the fake engine, the
# benchmarks, the kill soak's faults) and no fault read from the environment.
# Checked in the exported symbols (nm -D) and, unless the file is stripped, in
# every symbol (nm), hidden ones included: whole-archive linking would pull in
# any object of a listed archive, exported or not.
# Usage: library_symbols.sh LIBRARY...
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 LIBRARY..." >&2; exit 2; }
command -v nm >/dev/null || { echo "library_symbols: nm (binutils) not found" >&2; exit 1; }

# Demangled names; the class and function names stand in for code that might
# come back outside the namespace.
pattern='valet::testing::|SyntheticModel|Synth(Preset|Shape|ModelOptions|Vocab)|GgufWriter|GgufArray|FakeEngine'
pattern+='|VirtualClock|Contention(Session|Report|Runner)|ServeBench|ColdStart|TimelineSvg|HttpScenarioSink'
pattern+='|KillHooks|FaultPlan|FaultForTesting|Parse(Journal|Checkpoint)Fault'

status=0
for lib in "$@"; do
  [ -f "$lib" ] || { echo "library_symbols: $lib not found" >&2; exit 1; }
  dynamic="$(nm -D -C --defined-only "$lib")"
  [ -n "$dynamic" ] || { echo "library_symbols: $lib exports nothing: not the library" >&2; exit 1; }
  all="$(nm -C --defined-only "$lib" 2>/dev/null || true)"
  for kind in dynamic all; do
    found="$(grep -E "$pattern" <<<"${!kind}" | sort -u || true)"
    if [ -n "$found" ]; then
      label=exported
      [ "$kind" = dynamic ] || label="(hidden included)"
      echo "library_symbols: $lib has test code among its $label symbols:" >&2
      head -20 <<<"$found" >&2
      status=1
    fi
  done
  if grep -q VALET_FAULT "$lib"; then
    echo "library_symbols: $lib still names VALET_FAULT" >&2
    status=1
  fi
  [ -n "$all" ] || echo "library_symbols: $lib is stripped: exported symbols checked only"
done
[ "$status" -ne 0 ] || echo "library_symbols: no test code in $*"
exit "$status"
