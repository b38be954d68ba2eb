#include "rdmanet/cni/modes/net_conf.hpp"

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/protocol/text.hpp"

namespace rdmanet::cni {

namespace {

std::string quoted_mode_names(std::string_view last_separator) {
    const auto names = mode_names();
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) list += i + 1 == names.size() ? std::string(last_separator) : std::string(", ");
        list += text::quote(names[i]);
    }
    return list;
}

const ModeEntry* read_mode(const JsonFields& top, bool required) {
    auto mode = top.string("mode");
    if (!mode) {
        if (required) top.invalid("mode", "is required: set it to " + quoted_mode_names(" or "));
        return nullptr;
    }
    const ModeEntry* entry = find_mode_entry(*mode);
    // The reference macvlan plugin calls its macvlan mode "mode"; say where that goes.
    if (!entry)
        top.invalid("mode", text::quote(*mode) + " is not supported: use one of " + quoted_mode_names(", "),
                    "the macvlan mode (bridge, private, ...) goes in \"macvlanMode\"");
    return entry;
}

}  // namespace

NetConf parse_net_conf(std::string_view stdin_bytes, Command command) {
    NetConf conf = parse_common_conf(stdin_bytes, command);
    const bool strict = command == Command::add || command == Command::check;
    const Attempt attempt{strict};
    const JsonFields top(conf.raw, "", ErrorCode::invalid_config);
    const ModeEntry* entry = nullptr;
    attempt([&] { entry = read_mode(top, strict); });
    if (!entry) return conf;
    conf.mode = std::string(entry->name);
    // Only this mode's keys are read; another mode's are ignored entirely, since Multus writes
    // deviceID/pciBusID into every config whatever its mode.
    conf.settings = ModeSettingsHolder(entry->parse(ModeKeys{top, conf, attempt, strict}));
    return conf;
}

}  // namespace rdmanet::cni
