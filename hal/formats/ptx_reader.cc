#include "hal/formats/ptx_reader.h"

#include <algorithm>

namespace hal::formats {

namespace {

constexpr std::string_view kSpace = " \t\r\n";

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_' || c == '$';
}

}  // namespace

bool ReadPtxEntries(std::string_view ptx, std::vector<PtxEntry>* out,
                    std::string* error) {
  out->clear();
  size_t pos = 0;
  while ((pos = ptx.find(".entry", pos)) != std::string_view::npos) {
    pos += 6;
    const size_t start = ptx.find_first_not_of(kSpace, pos);
    size_t end = start == std::string_view::npos ? ptx.size() : start;
    while (end < ptx.size() && IsNameChar(ptx[end])) ++end;
    if (start == std::string_view::npos || end == start) {
      *error = "'.entry' without a name";
      return false;
    }
    PtxEntry entry;
    entry.name = std::string(ptx.substr(start, end - start));
    const size_t open = ptx.find_first_not_of(kSpace, end);
    if (open == std::string_view::npos || ptx[open] != '(') {
      out->push_back(std::move(entry));
      continue;
    }
    const size_t close = ptx.find(')', open);
    if (close == std::string_view::npos) {
      *error = "the parameter list of '.entry " + entry.name + "' has no ')'";
      return false;
    }
    const std::string_view params = ptx.substr(open + 1, close - open - 1);
    for (size_t p = 0;
         (p = params.find(".param", p)) != std::string_view::npos;) {
      p += 6;
      const size_t type = params.find_first_not_of(kSpace, p);
      const size_t type_end =
          type == std::string_view::npos
              ? params.size()
              : std::min(params.find_first_of(" \t\r\n,", type), params.size());
      if (type_end == type || type == std::string_view::npos) {
        *error = "a '.param' of '.entry " + entry.name + "' has no type";
        return false;
      }
      entry.param_types.emplace_back(params.substr(type, type_end - type));
      p = type_end;
    }
    out->push_back(std::move(entry));
    pos = close;
  }
  return true;
}

}  // namespace hal::formats
