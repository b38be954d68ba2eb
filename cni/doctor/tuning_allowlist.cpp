#include "rdmanet/cni/doctor/tuning_allowlist.hpp"

#include <algorithm>
#include <sstream>

namespace rdmanet::cni::doctor {

namespace {

std::string trimmed(const std::string& s) {
    const auto b = s.find_first_not_of(" \t\r");
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
}

// One regex as a glob over dot-separated parts, or "" when it uses more than anchors, dots
// (escaped or not: allowlists write both for the separator) and wildcards (".*", ".+", "[^.]*",
// "[^.]+").
std::string regex_to_glob(std::string re) {
    if (!re.empty() && re.front() == '^') re.erase(0, 1);
    if (!re.empty() && re.back() == '$') re.pop_back();
    constexpr char kSeparator = '\x01';
    replace_all(re, "\\.", std::string(1, kSeparator));
    for (const char* wildcard : {"[^.]*", "[^.]+", ".*", ".+"}) replace_all(re, wildcard, "*");
    if (re.find_first_of("\\()[]{}|+?") != std::string::npos) return "";
    std::replace(re.begin(), re.end(), kSeparator, '.');
    return re;
}

}  // namespace

AllowlistTranslation translate_tuning_allowlist(const std::string& text) {
    AllowlistTranslation out;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
        line = trimmed(line);
        if (line.empty()) continue;
        const std::string glob = regex_to_glob(line);
        // tree.tree.tree.<interface>.<setting>: rdmanet's per-interface keys.
        std::vector<std::string> parts;
        std::istringstream split(glob);
        for (std::string p; std::getline(split, p, '.');) parts.push_back(p);
        const bool interface_tree = parts.size() == 5 && parts[0] == "net" &&
                                    (parts[1] == "ipv4" || parts[1] == "ipv6") &&
                                    (parts[2] == "conf" || parts[2] == "neigh") && parts[3] != "all" &&
                                    parts[3] != "default" && !parts[4].empty();
        if (glob.empty() || !interface_tree) {
            out.untranslated.push_back(line);
            continue;
        }
        const std::string key = parts[0] + "." + parts[1] + "." + parts[2] + ".IFNAME." + parts[4];
        if (std::find(out.globs.begin(), out.globs.end(), key) == out.globs.end()) out.globs.push_back(key);
    }
    return out;
}

}  // namespace rdmanet::cni::doctor
