# Sourced by the test scripts: jobs run in the background at once, and their
# output is shown whole, job after job, when all have ended.
#   bg_start NAME LOG COMMAND...   starts COMMAND (a function too), output to LOG
#   bg_wait_all                    waits for every job, prints each LOG in start
#                                  order, names the jobs that failed; non-zero if any
bg_names=() bg_logs=() bg_pids=()

bg_start() {
  local name="$1" log="$2"
  shift 2
  "$@" >"$log" 2>&1 &
  bg_pids+=($!) bg_names+=("$name") bg_logs+=("$log")
}

bg_wait_all() {
  local status=0 i
  for i in "${!bg_pids[@]}"; do
    wait "${bg_pids[$i]}" || { status=1; echo "FAIL: ${bg_names[$i]}"; }
    cat "${bg_logs[$i]}"
  done
  return $status
}
