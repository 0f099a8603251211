# run_suite NAME CAP_S COMMAND...: one test suite of CI, bounded in time (sourced by .ci/run).
# A suite gets its cap, or what is left of CI_BUDGET_S (seconds since the shell started) less
# AFTER_SUITES_S for the colcon check and the table after the suites. A suite still running then
# prints where each of its threads is (SIGUSR1: test/conftest.py), is interrupted (pytest writes the
# junit file of what ran) and killed, with every process it started. It sets `suites` (NAME=junit
# file, for .ci/table.py) and `overran` (the suites that did not finish: CI fails).
# Needs `results`, a folder for the junit files.
CI_BUDGET_S="${CI_BUDGET_S:-4800}"
AFTER_SUITES_S="${AFTER_SUITES_S:-300}"
INTERRUPT_GRACE_S="${INTERRUPT_GRACE_S:-60}"  # for the interrupted suite to stop its processes
suites=()
overran=()

run_suite() {
  local name="$1" cap_s="$2"; shift 2
  local left_s=$(( CI_BUDGET_S - AFTER_SUITES_S - SECONDS ))
  local budget_s=$(( cap_s < left_s ? cap_s : left_s ))
  suites+=("$name=$results/$name.xml")
  if (( left_s < 60 )); then  # too little to set up a venv and start
    echo "== $name: not run: $left_s s of CI's $CI_BUDGET_S s left"
    overran+=("$name")
    return
  fi
  echo "== $name: $* (ROS_DOMAIN_ID=$ROS_DOMAIN_ID, at most $budget_s s)"
  local started=$SECONDS
  # A session of its own: the suite and whatever it leaves running are one group to end.
  setsid "$@" -q --junitxml="$results/$name.xml" &
  local pid=$!
  while kill -0 "$pid" 2>/dev/null && (( SECONDS - started < budget_s )); do sleep 1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "== $name: still running after $budget_s s: where its threads are, then an interrupt"
    overran+=("$name")
    kill -USR1 "$pid"; sleep 5; kill -INT "$pid"
    for _ in $(seq "$INTERRUPT_GRACE_S"); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    kill -KILL -- "-$pid" 2>/dev/null
  fi
  wait "$pid" 2>/dev/null  # (bash would add a line of its own for a killed job)
  local rc=$?
  kill -KILL -- "-$pid" 2>/dev/null  # what it left running would load the next suite
  echo "== $name: exit $rc in $(( SECONDS - started )) s"
}
