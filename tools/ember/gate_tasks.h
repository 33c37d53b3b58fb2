// The texts `ember gate` scores when no --tasks are given.
#pragma once

#include <string>
#include <vector>

namespace ember::cli {

struct GateText {
  std::string name;  // a file path, or "builtin:NAME"
  std::string text;
};

const std::vector<GateText>& default_gate_texts();

}  // namespace ember::cli
