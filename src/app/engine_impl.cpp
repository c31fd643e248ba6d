#include "app/engine_impl.h"

namespace drainwise::app {

namespace {

// Placeholder until the simulators land: every simulation route answers 503.
class PendingEngine : public server::Engine {
 public:
  Result<server::EngineResult> Assess(const server::EngineContext&, const nlohmann::json&) override {
    return MakeError(ErrorCode::kUnavailable, "simulators not built in");
  }
  Result<nlohmann::json> DrainCandidates(const server::EngineContext&, const std::string&,
                                         const std::vector<std::string>&) override {
    return MakeError(ErrorCode::kUnavailable, "simulators not built in");
  }
  Result<server::EngineResult> Plan(const server::EngineContext&, const nlohmann::json&) override {
    return MakeError(ErrorCode::kUnavailable, "simulators not built in");
  }
  nlohmann::json PolicyJson() const override { return nlohmann::json::object(); }
  Status SetPolicy(const nlohmann::json&) override { return MakeError(ErrorCode::kUnavailable, "no policies"); }
  std::string RenderText(std::string_view, const nlohmann::json& body) const override { return body.dump(2); }
};

}  // namespace

std::unique_ptr<server::Engine> MakeEngine(const nlohmann::json&, const nlohmann::json&,
                                           std::shared_ptr<spdlog::logger>) {
  return std::make_unique<PendingEngine>();
}

}  // namespace drainwise::app
