#include "graph/argument.h"

namespace graft {

Argument Argument::IntList(const std::vector<int64_t>& values) {
  ArgumentList list;
  list.reserve(values.size());
  for (int64_t v : values) list.emplace_back(v);
  return Argument(std::move(list));
}

bool Argument::is_int_list() const {
  if (!is_list()) return false;
  for (const Argument& a : list()) {
    if (!a.is_int()) return false;
  }
  return true;
}

std::vector<int64_t> Argument::int_list() const {
  std::vector<int64_t> out;
  if (is_int()) return {int_value()};
  for (const Argument& a : list()) out.push_back(a.int_value());
  return out;
}

bool Argument::HasNodes() const {
  if (is_node()) return true;
  if (!is_list()) return false;
  for (const Argument& a : list()) {
    if (a.HasNodes()) return true;
  }
  return false;
}

}  // namespace graft
