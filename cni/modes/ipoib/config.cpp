// mode "ipoib": its configuration keys.
#include <charconv>

#include "rdmanet/cni/modes/ipoib/mode.hpp"
#include "rdmanet/cni/protocol/env.hpp"

namespace rdmanet::cni {

namespace {

// A partition key as an integer (32769) or a hex string ("0x8001", as ib-kubernetes and
// `cat /sys/class/net/ib0/pkey` write it). The kernel refuses 0x0000 and 0x8000 (the invalid
// key with and without the membership bit).
std::optional<unsigned> pkey(const JsonFields& f, std::string_view key) {
    const auto* value = f.get(key);
    if (!value) return std::nullopt;
    unsigned pkey = 0;
    if (value->is_string()) {
        const auto text = value->get<std::string>();
        std::string_view digits = text;
        int base = 10;
        if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
            digits.remove_prefix(2);
            base = 16;
        }
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), pkey, base);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
            f.invalid(key, text::quote(text) +
                               " is not a partition key: write a number such as "
                               "\"0x8001\" or 32769");
    } else {
        pkey = f.uint(key).value_or(0);
    }
    if (pkey > 0xffff || (pkey & 0x7fff) == 0)
        f.invalid(key, std::to_string(pkey) +
                           " is not a usable partition key: it must be 0x0001-0xffff "
                           "and not 0x8000 (the 15-bit key must not be 0)");
    return pkey;
}

}  // namespace

std::unique_ptr<ModeSettings> parse_ipoib_conf(const ModeKeys& keys) {
    auto settings = std::make_unique<IpoibConf>();
    auto& ipoib = *settings;
    keys.attempt([&] {
        auto master = interface_name(keys.top, "master");
        if (!master && keys.required)
            keys.top.invalid("master",
                             "is required in ipoib mode: set it to the IPoIB parent interface "
                             "(e.g. \"ib0\")");
        ipoib.master = master.value_or("");
    });
    keys.attempt([&] { ipoib.pkey = pkey(keys.top, "pkey"); });
    keys.attempt([&] {
        auto mode = keys.top.string("ipoibMode");
        if (mode && *mode != "datagram" && *mode != "connected")
            keys.top.invalid("ipoibMode", text::quote(*mode) +
                                              " is not supported: use \"datagram\" or \"connected\" (or leave it "
                                              "out to inherit the parent's mode)");
        ipoib.mode = mode;
    });
    keys.attempt([&] { ipoib.mtu = keys.top.uint("mtu", 0x7fffffff).value_or(0); });
    return settings;
}

}  // namespace rdmanet::cni
