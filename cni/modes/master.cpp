// The master of a virtual child, looked up once for every child mode: see master.hpp.
#include "rdmanet/cni/modes/master.hpp"

#include "rdmanet/cni/modes/device_policy.hpp"
#include "rdmanet/cni/modes/rdma/rdma_isolation.hpp"
#include "rdmanet/cni/protocol/error.hpp"

namespace rdmanet::cni {

netns::LinkInfo find_master(netns::Rtnl& host, std::string_view kind, const std::string& master,
                            const std::string& fix) {
    auto link = host.link_by_name(master);
    if (!link)
        throw Error(ErrorCode::device_not_found,
                    std::string(kind) + " master \"" + master + "\" does not exist in the host network namespace", fix);
    return *link;
}

void admit_child(const AddRequest& req, const netns::LinkInfo& master, unsigned mtu) {
    check_master(req.policy, req.kernel.host, req.kernel.sysfs, master, req.conf.mode);
    if (mtu > master.mtu)
        throw Error(ErrorCode::invalid_config,
                    "mtu " + std::to_string(mtu) + " is larger than master " + master.name + "'s MTU " +
                        std::to_string(master.mtu),
                    "use an mtu of at most " + std::to_string(master.mtu) + ", or 0 to inherit it");
    rdma_isolation_check_child(req, master.name);
}

}  // namespace rdmanet::cni
