// The mode registry (cni/modes/registry.cpp) is the one table of modes: README.md's mode table
// must list the same modes in the same order, with the registry's words for what the pod's
// interface is and what becomes of its RDMA device; render gives Multus' device capabilities to
// exactly the modes that take a host device.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "rdmanet/cni/modes/registry.hpp"
#include "rdmanet/cni/translate/render.hpp"
#include "support/build_paths.hpp"

using namespace rdmanet::cni;

namespace {

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(' ');
    if (b == std::string::npos) return "";
    return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

std::vector<std::string> cells_of(const std::string& row) {
    std::vector<std::string> cells;
    std::stringstream in(row.substr(1));  // after the leading '|'
    std::string cell;
    while (std::getline(in, cell, '|')) cells.push_back(trim(cell));
    return cells;
}

// README.md's mode table: the header's cells, then one row of cells per mode.
struct Table {
    std::vector<std::string> header;
    std::vector<std::vector<std::string>> rows;
    std::size_t column(const std::string& name) const {
        for (std::size_t i = 0; i < header.size(); ++i)
            if (header[i] == name) return i;
        FAIL("README.md's mode table has no column \"" << name << "\"");
        return 0;
    }
};

Table readme_mode_table() {
    std::ifstream in(rdmanet::test::source_dir() + "/README.md");
    REQUIRE(in);
    Table table;
    std::string line;
    while (std::getline(in, line)) {
        if (table.header.empty()) {
            if (line.rfind("| mode |", 0) == 0) table.header = cells_of(line);
            continue;
        }
        if (line.rfind("|", 0) != 0) break;
        if (line.rfind("| ---", 0) == 0) continue;
        table.rows.push_back(cells_of(line));
    }
    REQUIRE_FALSE(table.header.empty());
    return table;
}

}  // namespace

TEST_CASE("mode table: README.md lists the registry's modes with its words for the interface and the RDMA device",
          "[unit][modes]") {
    const Table table = readme_mode_table();
    const auto mode = table.column("mode");
    const auto link = table.column("interface");
    const auto rdma = table.column("RDMA device");
    const auto entries = mode_entries();
    REQUIRE(table.rows.size() == entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
        const auto& row = table.rows[i];
        const auto& entry = entries[i];
        INFO("README.md row " << i + 1 << ": " << row.at(mode));
        REQUIRE(row.size() == table.header.size());
        CHECK(row[mode] == "`" + std::string(entry.name) + "`");
        CHECK(row[link] == describe(entry.link));
        CHECK(row[rdma] == describe(entry.rdma));
    }
}

TEST_CASE("mode table: a child link never isolates its RDMA device, and the words differ per property",
          "[unit][modes]") {
    for (const auto& entry : mode_entries()) {
        INFO(entry.name);
        // The RDMA device behind a child is its master's: it cannot move into one pod.
        if (entry.link == ModeLink::child_of_master) CHECK(entry.rdma == ModeRdma::shared_with_host);
        CHECK(entry.takes_host_device() == (entry.link == ModeLink::host_device));
    }
    CHECK(describe(ModeLink::child_of_master) != describe(ModeLink::host_device));
    CHECK(describe(ModeRdma::shared_with_host) != describe(ModeRdma::isolated_in_exclusive_mode));
    CHECK(mode_list(ModeRdma::isolated_in_exclusive_mode) == "hostdev, sriov");
    CHECK(mode_list(ModeRdma::shared_with_host) == "macvlan, ipoib");
}

TEST_CASE("mode table: render asks Multus for the device of exactly the modes that take a host device",
          "[unit][modes][render]") {
    for (const auto& entry : mode_entries()) {
        INFO(entry.name);
        // The project's own kind, with a device plugin's resource: a child mode names its master.
        const std::string network =
            "apiVersion: rdmanet.dev/v1alpha1\nkind: RdmaNetwork\nmetadata: {name: net}\n"
            "spec:\n  resourceName: example.com/dev\n  mode: " +
            std::string(entry.name) + (entry.link == ModeLink::child_of_master ? "\n  master: eth0" : "") +
            "\n  ipam: {type: rdmanet-ipam, range: 10.61.0.0/16}\n";
        const auto rendered = translate::render_documents(network, translate::RenderOptions{});
        REQUIRE(rendered.size() == 1);
        const auto config = nlohmann::json::parse(rendered[0]["spec"]["config"].get<std::string>());
        CHECK(config.contains("capabilities") == entry.takes_host_device());
        if (entry.takes_host_device()) {
            CHECK(config["capabilities"].value("deviceID", false));
            CHECK(config["capabilities"].value("CNIDeviceInfoFile", false));
        }
    }
}
