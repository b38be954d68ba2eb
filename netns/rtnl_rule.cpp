// Policy routing rules (RTM_NEWRULE/RTM_DELRULE/RTM_GETRULE), built by hand: libnl's rtnl_rule
// hides the difference between "no priority" and priority 0, which a delete must keep.
#include <linux/fib_rules.h>
#include <linux/rtnetlink.h>

#include "rtnl_impl.hpp"

namespace rdmanet::netns {
namespace {

std::string describe(const RuleInfo& r) {
    std::string s = "from " + (r.src ? r.src->str() : std::string("all")) + " lookup " + std::to_string(r.table);
    if (r.priority) s += " priority " + std::to_string(*r.priority);
    return s;
}

detail::NlMsgPtr rule_request(int type, int flags, const RuleInfo& r, const std::string& what) {
    const int family = r.family ? r.family : (r.src ? r.src->address.af() : 0);
    if (family != AF_INET && family != AF_INET6) throw KernelError(EINVAL, what + ": no address family");
    fib_rule_hdr hdr{};
    hdr.family = static_cast<std::uint8_t>(family);
    hdr.action = FR_ACT_TO_TBL;
    hdr.table = r.table < 256 ? static_cast<std::uint8_t>(r.table) : std::uint8_t{RT_TABLE_UNSPEC};
    if (r.src) hdr.src_len = static_cast<std::uint8_t>(r.src->prefix);
    detail::NlMsgPtr msg = detail::new_message(type, flags, &hdr, sizeof hdr);
    bool ok = nla_put_u32(msg.get(), FRA_TABLE, r.table) == 0;
    if (r.priority) ok = ok && nla_put_u32(msg.get(), FRA_PRIORITY, *r.priority) == 0;
    if (r.src) {
        ok = ok && nla_put(msg.get(), FRA_SRC, static_cast<int>(r.src->address.size()), r.src->address.data()) == 0;
    }
    if (!ok) throw KernelError(ENOMEM, what);
    return msg;
}

}  // namespace

void Rtnl::add_rule(const RuleInfo& rule) {
    const std::string what = "add rule " + describe(rule);
    auto msg = rule_request(RTM_NEWRULE, NLM_F_CREATE | NLM_F_EXCL, rule, what);
    impl_->run(msg.get(), what);
}

void Rtnl::delete_rule(const RuleInfo& rule) {
    const std::string what = "delete rule " + describe(rule);
    auto msg = rule_request(RTM_DELRULE, 0, rule, what);
    impl_->run(msg.get(), what);
}

std::vector<RuleInfo> Rtnl::rules() {
    std::vector<RuleInfo> result;
    impl_->dump(
        "dump rules",
        [] {
            fib_rule_hdr hdr{};
            hdr.family = AF_UNSPEC;  // both families in one dump
            return detail::new_message(RTM_GETRULE, NLM_F_DUMP, &hdr, sizeof hdr);
        },
        [&] { result.clear(); },
        [&](nl_msg* reply) {
            nlmsghdr* nlh = nlmsg_hdr(reply);
            if (nlh->nlmsg_type != RTM_NEWRULE) return;
            const auto* hdr = static_cast<const fib_rule_hdr*>(nlmsg_data(nlh));
            nlattr* tb[FRA_MAX + 1] = {};
            if (nlmsg_parse(nlh, sizeof(fib_rule_hdr), tb, FRA_MAX, nullptr) < 0)
                throw KernelError(EPROTO, "parse RTM_NEWRULE");
            RuleInfo info;
            info.family = hdr->family;
            info.table = tb[FRA_TABLE] ? nla_get_u32(tb[FRA_TABLE]) : hdr->table;
            if (tb[FRA_PRIORITY]) info.priority = nla_get_u32(tb[FRA_PRIORITY]);
            if (tb[FRA_SRC]) {
                const int len = nla_len(tb[FRA_SRC]);
                if (len == 4 || len == 16) {
                    const auto* bytes = static_cast<const std::uint8_t*>(nla_data(tb[FRA_SRC]));
                    base::uint128 value = 0;
                    for (int i = 0; i < len; ++i) value = value << 8 | bytes[i];
                    info.src = base::IpNetwork{
                        base::IpAddress::from_u128(len == 4 ? base::IpAddress::Family::v4 : base::IpAddress::Family::v6,
                                                   value),
                        hdr->src_len};
                }
            }
            result.push_back(std::move(info));
        });
    return result;
}

}  // namespace rdmanet::netns
