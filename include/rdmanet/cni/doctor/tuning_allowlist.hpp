#pragma once
// The tuning plugin's sysctl allowlist (/etc/cni/tuning/allowlist.conf: one regular expression per
// line, a key matching none refused) expressed as the node policy's "sysctls" globs, which limit
// rdmanet's own "sysctl" keys. rdmanet does not read tuning's file: `rdmanetctl doctor` reports
// what this translation gives, for the admin to copy into the policy.
#include <string>
#include <vector>

namespace rdmanet::cni::doctor {

struct AllowlistTranslation {
    std::vector<std::string> globs;         // "net.ipv4.conf.IFNAME.arp_*", in file order, each once
    std::vector<std::string> untranslated;  // entries that are no per-interface key, or too complex a regex
};

// Pure: `text` is the file's content.
AllowlistTranslation translate_tuning_allowlist(const std::string& text);

}  // namespace rdmanet::cni::doctor
