# Sourced, not run: exports RDMANET_PEER_<NAME>=<dir> for every real peer already built by
# build_peers.sh at the version tests/peers pins (under $PEERS_CACHE, default
# /var/cache/rdmanet-peers). A peer that is missing is left unset, and a test that needs it then
# skips (exit 77), or fails under CI. A variable the caller already set is kept.
#   . tests/peers/peer_env.sh
_rdmanet_peers_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
while read -r _rdmanet_peers_line; do
  _rdmanet_peers_var=${_rdmanet_peers_line#export }
  _rdmanet_peers_var=${_rdmanet_peers_var%%=*}
  if [ -z "${!_rdmanet_peers_var:-}" ]; then
    eval "$_rdmanet_peers_line"
  fi
done < <(bash "$_rdmanet_peers_here/build_peers.sh" --env)
unset _rdmanet_peers_here _rdmanet_peers_line _rdmanet_peers_var
