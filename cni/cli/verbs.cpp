// libibverbs' view of the node's RDMA ports, for rdmanetctl devices. libibverbs is dlopen'ed here,
// not linked: it links the shared libnl-route, and a second libnl in a process whose own libnl
// is linked in statically makes libnl abort on macvlan links (its link-type registry and type
// checks end up in different copies), which broke the node agent's repairs in rdmanetctl. The
// plugin never needs verbs.
#include <infiniband/verbs.h>

#include <dlfcn.h>

#include <memory>
#include <string>

#include "rdmanet/cni/cli/rdma.hpp"

namespace rdmanet::cni::cli {

namespace {

// The few entry points `devices` uses, resolved once from libibverbs.so.1.
struct Verbs {
    void* handle = nullptr;
    ibv_device** (*get_device_list)(int*) = nullptr;
    void (*free_device_list)(ibv_device**) = nullptr;
    const char* (*get_device_name)(ibv_device*) = nullptr;
    ibv_context* (*open_device)(ibv_device*) = nullptr;
    int (*close_device)(ibv_context*) = nullptr;
    int (*query_device)(ibv_context*, ibv_device_attr*) = nullptr;
    int (*query_port)(ibv_context*, std::uint8_t, ibv_port_attr*) = nullptr;
    const char* (*port_state_str)(ibv_port_state) = nullptr;

    bool loaded() const {
        return get_device_list && free_device_list && get_device_name && open_device && close_device && query_device &&
               query_port && port_state_str;
    }
};

template <class Fn>
void resolve(void* handle, const char* name, Fn& fn) {
    fn = reinterpret_cast<Fn>(::dlsym(handle, name));
}

const Verbs& verbs() {
    static const Verbs v = [] {
        Verbs out;
        out.handle = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!out.handle) return out;
        resolve(out.handle, "ibv_get_device_list", out.get_device_list);
        resolve(out.handle, "ibv_free_device_list", out.free_device_list);
        resolve(out.handle, "ibv_get_device_name", out.get_device_name);
        resolve(out.handle, "ibv_open_device", out.open_device);
        resolve(out.handle, "ibv_close_device", out.close_device);
        resolve(out.handle, "ibv_query_device", out.query_device);
        resolve(out.handle, "ibv_query_port", out.query_port);
        resolve(out.handle, "ibv_port_state_str", out.port_state_str);
        return out;
    }();
    return v;
}

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
    const Verbs& v = verbs();
    if (!v.loaded()) return ports;  // no libibverbs on this node: same as no devices
    const auto free_list = [&v](ibv_device** l) { v.free_device_list(l); };
    const auto close = [&v](ibv_context* c) { v.close_device(c); };
    int count = 0;
    std::unique_ptr<ibv_device*, decltype(free_list)> list(v.get_device_list(&count), free_list);
    if (!list) return ports;  // no uverbs at all (ENOSYS): same as no devices
    for (int i = 0; i < count; ++i) {
        const std::string name = v.get_device_name(list.get()[i]);
        std::unique_ptr<ibv_context, decltype(close)> ctx(v.open_device(list.get()[i]), close);
        if (!ctx) continue;  // no permission on /dev/infiniband/uverbsN: sysfs still lists it
        ibv_device_attr attr{};
        if (v.query_device(ctx.get(), &attr) != 0) continue;
        for (unsigned p = 1; p <= attr.phys_port_cnt; ++p) {
            ibv_port_attr port{};
            if (v.query_port(ctx.get(), static_cast<std::uint8_t>(p), &port) != 0) continue;
            std::string state = v.port_state_str(port.state);
            if (state.rfind("PORT_", 0) == 0) state = state.substr(5);
            ports.push_back(VerbsPort{name, p, state, link_layer_name(port.link_layer)});
        }
    }
    return ports;
}

}  // namespace rdmanet::cni::cli
