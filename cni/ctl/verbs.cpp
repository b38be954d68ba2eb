// libibverbs' view of the node's RDMA ports, for rdmanetctl devices. Only rdmanetctl links this
// file (and libibverbs, dynamically): the plugin never needs verbs.
#include <infiniband/verbs.h>

#include <memory>
#include <string>

#include "rdmanet/cni/ctl/rdma.hpp"

namespace rdmanet::cni::ctl {

namespace {
struct DeviceListFree { void operator()(ibv_device** l) const { ibv_free_device_list(l); } };
struct ContextClose { void operator()(ibv_context* c) const { ibv_close_device(c); } };

std::string link_layer_name(std::uint8_t layer) {
    switch (layer) {
    case IBV_LINK_LAYER_ETHERNET: return "Ethernet";
    case IBV_LINK_LAYER_INFINIBAND: return "InfiniBand";
    default: return "unspecified";
    }
}
}  // namespace

std::vector<VerbsPort> query_verbs_ports() {
    std::vector<VerbsPort> ports;
    int count = 0;
    std::unique_ptr<ibv_device*, DeviceListFree> list(ibv_get_device_list(&count));
    if (!list) return ports;   // no uverbs at all (ENOSYS): same as no devices
    for (int i = 0; i < count; ++i) {
        const std::string name = ibv_get_device_name(list.get()[i]);
        std::unique_ptr<ibv_context, ContextClose> ctx(ibv_open_device(list.get()[i]));
        if (!ctx) continue;   // no permission on /dev/infiniband/uverbsN: sysfs still lists it
        ibv_device_attr attr{};
        if (ibv_query_device(ctx.get(), &attr) != 0) continue;
        for (unsigned p = 1; p <= attr.phys_port_cnt; ++p) {
            ibv_port_attr port{};
            if (ibv_query_port(ctx.get(), static_cast<std::uint8_t>(p), &port) != 0) continue;
            std::string state = ibv_port_state_str(port.state);
            if (state.rfind("PORT_", 0) == 0) state = state.substr(5);
            ports.push_back(VerbsPort{name, p, state, link_layer_name(port.link_layer)});
        }
    }
    return ports;
}

}  // namespace rdmanet::cni::ctl
