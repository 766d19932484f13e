#include "src/aot/recorder.h"

namespace kiln::aot {
namespace {

thread_local Recorder* g_recorder = nullptr;

void handle_record_key(const OpDef& op, Stack& args, Stack& outputs, DispatchKeySet keys) {
  if (g_recorder != nullptr) {
    g_recorder->handle(op, args, outputs);
    return;
  }
  dispatch::redispatch(op, args, outputs, keys.remove(DispatchKey::Record));
}
const bool g_record_key_registered = [] {
  dispatch::set_fallback(DispatchKey::Record, handle_record_key);
  return true;
}();

}  // namespace

Recorder*& current_recorder() {
  (void)g_record_key_registered;  // this translation unit installs the Record key's handler
  return g_recorder;
}

}  // namespace kiln::aot
