# Compatibility: the kernel-layer integration tests (tag [netns]: links, altnames, macvlan,
# move+rename in one message, netns guard and destruction, addresses, routes, dumps, sysfs)
# on this kernel, one check per test case so a failure names the case.
IT="$BUILD_DIR/bin/integration_tests"
if [ -x "$IT" ]; then
  "$IT" --list-test-names-only "[netns]" | sed '/^$/d' >/tmp/netns_cases
  while IFS= read -r case_name; do
    # Catch2 treats a test spec's commas and brackets specially; escape them.
    spec=$(printf '%s' "$case_name" | sed 's/\\/\\\\/g; s/,/\\,/g; s/\[/\\[/g')
    check "integration on $(uname -r): $case_name" timeout 300 "$IT" "$spec"
  done </tmp/netns_cases
  [ -s /tmp/netns_cases ] || check "integration: the [netns] tests are listed" false
else
  check "integration: $IT is in the initramfs" false
fi
