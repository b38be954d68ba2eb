#pragma once
// What a mode's configuration parser (cni/modes/<mode>/config.cpp) gets to read its own keys,
// and the key readers the modes share. Errors are invalid_config (7) naming the key.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/protocol/json_fields.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

// Runs one key's parser. A strict parse (ADD, CHECK) fails on the first bad key; a lenient one
// (DEL, GC, STATUS) leaves that key at its default and goes on, so teardown never depends on a
// config that has since become invalid.
struct Attempt {
    bool strict = true;
    template <class Parse>
    void operator()(Parse&& parse) const {
        if (strict) {
            parse();
            return;
        }
        try {
            parse();
        } catch (const Error&) {
        }
    }
};

// One mode's view of the configuration: the top-level object, the keys every mode shares
// (already parsed into `conf`: runtimeConfig, args, ...), and whether the verb is strict.
struct ModeKeys {
    const JsonFields& top;
    const NetConf& conf;
    const Attempt& attempt;
    bool required;  // ADD/CHECK: keys a mode cannot work without must be present
};

// `value` must be one of `allowed`; the message lists them.
template <std::size_t N>
std::string one_of(const JsonFields& f, std::string_view key, const std::string& value,
                   const std::array<std::string_view, N>& allowed, std::string_view hint = {}) {
    std::string list;
    for (auto option : allowed) {
        if (option == value) return value;
        list += (list.empty() ? "" : ", ") + text::quote(option);
    }
    f.invalid(key, text::quote(value) + " is not supported: use one of " + list, std::string(hint));
}

// A unicast, non-zero MAC, lower-cased; nullopt when absent.
std::optional<std::string> assignable_mac(const JsonFields& f, std::string_view key);
// A valid interface name; nullopt when absent.
std::optional<std::string> interface_name(const JsonFields& f, std::string_view key);
// A reader that only names members of runtimeConfig in errors: runtimeConfig's values are read
// by the common parser, the modes decide what they mean for them.
const JsonFields& runtime_config_names();

}  // namespace rdmanet::cni
