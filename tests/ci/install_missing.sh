# shellcheck shell=bash
# Sourced by the scripts that install what they need (tests/run.sh, the labs, the arm64 build).
#
# install_missing package...: apt-get installs those of the packages (a name, or name:arch) that
# are not installed yet. When none is missing it does nothing at all, not even `apt-get update`:
# a machine that has everything runs no apt and needs no network for it.
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  ((${#missing[@]})) || return 0
  echo "== ${0##*/}: installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
