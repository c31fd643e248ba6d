// Transitional: the server's JSON-level server::Engine on top of the typed
// engine library (src/engine) and the serving view of server::State. Each
// call reads one view; policy and calibration changes publish a new view.
// Goes away when the API handlers call the typed engine themselves.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "server/engine.h"
#include "server/state.h"

namespace drainwise::app {

std::unique_ptr<server::Engine> MakeViewEngine(server::State* state, engine::Engine* engine);

}  // namespace drainwise::app
