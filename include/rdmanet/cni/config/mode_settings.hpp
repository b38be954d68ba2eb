#pragma once
// A mode's own configuration keys (macvlan's master, sriov's VF settings, ...), parsed by the
// mode itself (cni/modes/<mode>/config.cpp) and carried in NetConf without the configuration
// layer knowing any mode: the holder is type-erased, the mode reads its settings back by type.
#include <memory>
#include <optional>
#include <string>

namespace rdmanet::cni {

class ModeSettings {
public:
    virtual ~ModeSettings() = default;
    virtual std::unique_ptr<ModeSettings> clone() const = 0;
    // The MAC the mode's own "mac" key asks for, lower-cased; the lowest-precedence source of
    // NetConf::requested_mac. nullopt for modes without such a key.
    virtual std::optional<std::string> own_mac() const { return std::nullopt; }
};

// Base of a concrete settings struct: `struct MacvlanConf : ModeSettingsOf<MacvlanConf> {...}`.
template <class Derived>
class ModeSettingsOf : public ModeSettings {
public:
    std::unique_ptr<ModeSettings> clone() const override {
        return std::make_unique<Derived>(static_cast<const Derived&>(*this));
    }
};

// Owns one mode's settings with value semantics (copies clone).
class ModeSettingsHolder {
public:
    ModeSettingsHolder() = default;
    explicit ModeSettingsHolder(std::unique_ptr<ModeSettings> settings) : settings_(std::move(settings)) {}
    ModeSettingsHolder(const ModeSettingsHolder& other)
        : settings_(other.settings_ ? other.settings_->clone() : nullptr) {}
    ModeSettingsHolder& operator=(const ModeSettingsHolder& other) {
        if (this != &other) settings_ = other.settings_ ? other.settings_->clone() : nullptr;
        return *this;
    }
    ModeSettingsHolder(ModeSettingsHolder&&) noexcept = default;
    ModeSettingsHolder& operator=(ModeSettingsHolder&&) noexcept = default;

    // The settings as S, or S's defaults when they are another mode's or absent: a DEL whose
    // configuration changed mode since ADD runs the recorded mode, which then sees its defaults.
    template <class S>
    const S& get() const {
        if (const auto* settings = dynamic_cast<const S*>(settings_.get())) return *settings;
        static const S defaults{};
        return defaults;
    }
    // The settings as S for writing, replacing any other mode's (tests build configs this way).
    template <class S>
    S& edit() {
        if (!dynamic_cast<S*>(settings_.get())) settings_ = std::make_unique<S>();
        return static_cast<S&>(*settings_);
    }
    const ModeSettings* get_any() const { return settings_.get(); }

private:
    std::unique_ptr<ModeSettings> settings_;
};

}  // namespace rdmanet::cni
