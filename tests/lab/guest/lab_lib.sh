# Check helpers for the in-guest lab scripts (sourced). Each check prints one line,
#   LAB-PASS: <name>   or   LAB-FAIL: <name> (exit N)  followed by the command's output,
# and lab_summary prints the line the host parses:
#   RDMANET-LAB-SUMMARY pass=<n> fail=<n> skip=<n>
LAB_PASS=0
LAB_FAIL=0
LAB_SKIP=0

# check <name> <command> [args...]: passes when the command (a program or a function) exits 0.
check() {
  _name=$1
  shift
  _start=$(date +%s)
  if _out=$("$@" 2>&1); then
    LAB_PASS=$((LAB_PASS + 1))
    echo "LAB-PASS: $_name ($(($(date +%s) - _start))s)"
    [ -n "${LAB_VERBOSE:-}" ] && printf '%s\n' "$_out" | sed 's/^/    | /'
  else
    _rc=$?
    LAB_FAIL=$((LAB_FAIL + 1))
    echo "LAB-FAIL: $_name (exit $_rc, $(($(date +%s) - _start))s)"
    printf '%s\n' "$_out" | tail -n 60 | sed 's/^/    | /'
  fi
  return 0
}

# skip <name> <reason>: a check that could not run here; counted and named, never a pass.
skip() {
  LAB_SKIP=$((LAB_SKIP + 1))
  echo "LAB-SKIP: $1 ($2)"
}

# output_has <text> <command> [args...]: the command succeeds and prints <text>.
output_has() {
  _want=$1
  shift
  _got=$("$@" 2>&1) || { printf '%s\n' "$_got"; echo "(command failed: $*)"; return 1; }
  printf '%s\n' "$_got"
  case $_got in *"$_want"*) return 0 ;; esac
  echo "(expected output containing: $_want)"
  return 1
}

# output_lacks <text> <command> [args...]: the command succeeds and does not print <text>.
output_lacks() {
  _want=$1
  shift
  _got=$("$@" 2>&1) || { printf '%s\n' "$_got"; echo "(command failed: $*)"; return 1; }
  printf '%s\n' "$_got"
  case $_got in *"$_want"*) echo "(unexpected: $_want)"; return 1 ;; esac
  return 0
}

# fails_with <text> <command> [args...]: the command fails and its output contains <text>.
fails_with() {
  _want=$1
  shift
  if _got=$("$@" 2>&1); then
    printf '%s\n' "$_got"
    echo "(expected a failure: $*)"
    return 1
  fi
  printf '%s\n' "$_got"
  case $_got in *"$_want"*) return 0 ;; esac
  echo "(expected output containing: $_want)"
  return 1
}

# file_is <path> <content>: the file holds exactly <content> (one line).
file_is() {
  _got=$(cat "$1" 2>&1) || { echo "$_got"; return 1; }
  echo "$1: $_got"
  [ "$_got" = "$2" ]
}

# retry <seconds> <command> [args...]: runs the command once a second until it succeeds. For
# state the kernel changes asynchronously (a deleted netns is cleaned up by a workqueue).
retry() {
  _left=$1
  shift
  while :; do
    "$@" && return 0
    _left=$((_left - 1))
    [ "$_left" -le 0 ] && return 1
    sleep 1
  done
}

# load_modules: insmod, in order, every module of /lab/modules (one line per module: its path and
# its parameters, written by the initramfs builder). check_modules_load: that as one check, the
# modules' names in the check's name.
load_modules() {
  while read -r path params; do
    # shellcheck disable=SC2086 # params are separate words
    insmod "$path" $params || return 1
  done </lab/modules
}
check_modules_load() {
  check "kernel modules load ($(sed 's|.*/||; s|\.ko.*||' /lab/modules | tr '\n' ' '))" load_modules
}

lab_summary() {
  echo "RDMANET-LAB-SUMMARY pass=$LAB_PASS fail=$LAB_FAIL skip=$LAB_SKIP"
}
