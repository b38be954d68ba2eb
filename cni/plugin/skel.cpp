#include "rdmanet/cni/plugin/skel.hpp"

#include <iostream>
#include <iterator>

#include <spdlog/spdlog.h>

#include "rdmanet/cni/config/config.hpp"
#include "rdmanet/cni/protocol/error.hpp"
#include "rdmanet/cni/logging/logging.hpp"
#include "rdmanet/cni/protocol/version.hpp"
#include "rdmanet/netns/error.hpp"

namespace rdmanet::cni {

namespace {

void print_version(const std::string& input, std::ostream& out) {
    nlohmann::json versions = nlohmann::json::array();
    for (auto v : kSupportedVersions) versions.push_back(std::string(v));
    out << nlohmann::json{{"cniVersion", reply_version(input)}, {"supportedVersions", versions}}.dump() << '\n';
}

void print_about(std::string_view about, std::ostream& err) {
    err << about << "\nCNI protocol versions supported:";
    for (auto v : kSupportedVersions) err << ' ' << v;
    err << '\n';
}

}  // namespace

int run_skel(const EnvLookup& lookup, std::istream& in, std::ostream& out, std::ostream& err, std::string_view about,
             const VerbHandler& handle) {
    // spdlog's default logger writes to stdout, which belongs to the result: until the config
    // names a log file, log nowhere.
    setup_logging("", "off", "");
    std::string error_version(kLatestVersion);
    try {
        const Environment env = parse_environment(lookup);
        if (env.command == Command::none) {
            print_about(about, err);
            return 0;
        }
        const std::string input{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
        error_version = reply_version(input);
        if (env.command == Command::version) {
            print_version(input, out);
            return 0;
        }
        handle(env, input, out);
        return 0;
    } catch (const Error& e) {
        spdlog::error("{} ({})", e.msg(), e.details());
        out << e.to_json(error_version).dump() << '\n';
    } catch (const netns::KernelError& e) {
        spdlog::error("kernel: {}", e.what());
        out << Error(ErrorCode::kernel_failure, e.what()).to_json(error_version).dump() << '\n';
    } catch (const std::exception& e) {
        spdlog::error("internal: {}", e.what());
        out << Error(ErrorCode::kernel_failure, std::string("internal error: ") + e.what())
                   .to_json(error_version)
                   .dump()
            << '\n';
    }
    return 1;
}

}  // namespace rdmanet::cni
