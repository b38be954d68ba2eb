// IPoIB child creation through rtnetlink (include/uapi/linux/if_link.h) and the
// parent's attributes from sysfs.
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include <charconv>
#include <fstream>

#include "raw_netlink.hpp"
#include "rdmanet/netns/error.hpp"
#include "rdmanet/netns/ipoib.hpp"

namespace rdmanet::netns {

static_assert(static_cast<int>(IpoibMode::datagram) == IPOIB_MODE_DATAGRAM);
static_assert(static_cast<int>(IpoibMode::connected) == IPOIB_MODE_CONNECTED);

std::string_view ipoib_mode_name(IpoibMode mode) { return mode == IpoibMode::connected ? "connected" : "datagram"; }

std::optional<IpoibMode> parse_ipoib_mode(std::string_view name) {
    if (name == "datagram") return IpoibMode::datagram;
    if (name == "connected") return IpoibMode::connected;
    return std::nullopt;
}

namespace ipoib_wire {

std::vector<std::uint8_t> encode_newlink(std::uint32_t seq, const IpoibSpec& spec) {
    detail::NlWriter w(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
    const ifinfomsg ifi{};
    w.header(&ifi, sizeof ifi);
    w.put_string(IFLA_IFNAME, spec.name);
    w.put_u32(IFLA_LINK, static_cast<std::uint32_t>(spec.parent_index));
    const auto info = w.begin_nest(IFLA_LINKINFO);
    w.put_string(IFLA_INFO_KIND, "ipoib");
    const auto data = w.begin_nest(IFLA_INFO_DATA);
    w.put_u16(IFLA_IPOIB_PKEY, spec.pkey);
    w.put_u16(IFLA_IPOIB_MODE, static_cast<std::uint16_t>(spec.mode));
    w.put_u16(IFLA_IPOIB_UMCAST, spec.umcast ? 1 : 0);
    w.end_nest(data);
    w.end_nest(info);
    return w.finish();
}

}  // namespace ipoib_wire

namespace {

class KernelIpoibLinks final : public IpoibLinks {
public:
    KernelIpoibLinks() : sock_(NETLINK_ROUTE) {}

    void create(const IpoibSpec& spec) override {
        const auto seq = sock_.next_seq();
        detail::throw_if_failed(sock_.transact(ipoib_wire::encode_newlink(seq, spec), seq),
                                "create IPoIB child " + spec.name + " (pkey " + std::to_string(spec.pkey) + ", " +
                                    std::string(ipoib_mode_name(spec.mode)) + ")");
    }
    std::string kind() const override { return "ipoib"; }

private:
    detail::RawNetlinkSocket sock_;
};

std::optional<std::string> read_first_line(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    if (!in || !std::getline(in, line)) return std::nullopt;
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
    return line;
}

template <class T>
std::optional<T> parse_number(std::string_view text, int base) {
    if (base == 16 && text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) text.remove_prefix(2);
    T value{};
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

std::unique_ptr<IpoibLinks> open_ipoib_links() { return std::make_unique<KernelIpoibLinks>(); }

std::optional<IpoibParentInfo> read_ipoib_parent(const Sysfs& sysfs, const std::string& ifname) {
    if (ifname.empty() || ifname == "." || ifname == ".." || ifname.find('/') != std::string::npos) return std::nullopt;
    const std::string dir = sysfs.root() + "/class/net/" + ifname;
    auto type = read_first_line(dir + "/type");
    if (!type) return std::nullopt;
    IpoibParentInfo info;
    info.type = parse_number<unsigned>(*type, 10).value_or(0);
    if (auto pkey = read_first_line(dir + "/pkey"))
        if (auto v = parse_number<unsigned>(*pkey, 16); v && *v <= 0xffff) info.pkey = static_cast<std::uint16_t>(*v);
    if (auto mode = read_first_line(dir + "/mode")) info.mode = parse_ipoib_mode(*mode);
    return info;
}

}  // namespace rdmanet::netns
