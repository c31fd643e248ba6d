// An aligned plain-text table for terminals (curl users, the CLI).
#pragma once

#include <string>
#include <vector>

namespace drainwise::report {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  // Columns padded to their widest cell, two spaces apart; numbers are not
  // right-aligned (cells are strings) to keep it simple and greppable.
  std::string Render() const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace drainwise::report
