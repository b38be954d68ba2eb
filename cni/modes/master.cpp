// The master of a virtual child, looked up once for every child mode: see master.hpp.
#include "rdmanet/cni/modes/master.hpp"
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

}  // namespace rdmanet::cni
