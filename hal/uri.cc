#include "hal/uri.h"

#include <cctype>
#include <charconv>

namespace hal {

namespace {

Status UriError(std::string_view uri, size_t pos, const char* reason) {
  return InvalidArgumentError("device URI '%.*s': %s at position %zu",
                              static_cast<int>(uri.size()), uri.data(), reason,
                              pos);
}

bool IsDriverChar(char c, bool first) {
  if (c >= 'a' && c <= 'z') return true;
  if (first) return false;
  return (c >= '0' && c <= '9') || c == '_' || c == '-';
}

bool IsIdChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' ||
         c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Decodes %XX escapes in [begin, end) of `uri`.
StatusOr<std::string> Decode(std::string_view uri, size_t begin, size_t end) {
  std::string out;
  for (size_t i = begin; i < end; ++i) {
    char c = uri[i];
    if (c == '%') {
      if (i + 2 >= end) {
        return UriError(uri, i, "truncated %-escape");
      }
      int hi = HexValue(uri[i + 1]), lo = HexValue(uri[i + 2]);
      if (hi < 0 || lo < 0) return UriError(uri, i, "bad %-escape");
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (static_cast<unsigned char>(c) <= 0x20 || c == '#' || c == '?' ||
               static_cast<unsigned char>(c) >= 0x7f) {
      return UriError(uri, i, "character not allowed (escape it as %XX)");
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string Encode(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == ',' ||
        c == ':' || c == '/') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace

StatusOr<DeviceUri> DeviceUri::Parse(std::string_view uri) {
  if (uri.empty()) return InvalidArgumentError("device URI is empty");
  DeviceUri out;
  size_t i = 0;
  while (i < uri.size() && IsDriverChar(uri[i], i == 0)) ++i;
  if (i == 0) return UriError(uri, 0, "driver name must start with a-z");
  out.driver = std::string(uri.substr(0, i));
  if (i < uri.size() && uri[i] == ':') {
    ++i;
    if (uri.substr(i, 2) == "//") {
      i += 2;
    } else if (i == uri.size() || uri[i] == '?') {
      return UriError(uri, i, "expected a device id after ':'");
    }
    while (i < uri.size() && uri[i] != '?') {
      size_t id_start = i;
      while (i < uri.size() && IsIdChar(uri[i])) ++i;
      if (i == id_start) {
        return UriError(uri, i,
                        i < uri.size() && uri[i] == ','
                            ? "empty device id"
                            : "character not allowed in a device id");
      }
      out.devices.emplace_back(uri.substr(id_start, i - id_start));
      if (i < uri.size() && uri[i] == ',') {
        ++i;
        if (i == uri.size() || uri[i] == '?')
          return UriError(uri, i, "empty device id");
      } else if (i < uri.size() && uri[i] != '?') {
        return UriError(uri, i, "character not allowed in a device id");
      }
    }
  }
  if (i < uri.size()) {
    if (uri[i] != '?') return UriError(uri, i, "expected ':', '://' or '?'");
    ++i;
    if (i == uri.size()) return out;  // "sim://?" is an empty parameter list
    while (true) {
      size_t amp = uri.find('&', i);
      size_t end = amp == std::string_view::npos ? uri.size() : amp;
      size_t eq = uri.find('=', i);
      if (eq == std::string_view::npos || eq >= end) {
        return UriError(uri, i, "parameter without '='");
      }
      if (eq == i) return UriError(uri, i, "empty parameter name");
      HAL_ASSIGN_OR_RETURN(std::string key, Decode(uri, i, eq));
      HAL_ASSIGN_OR_RETURN(std::string value, Decode(uri, eq + 1, end));
      if (!out.params.emplace(key, value).second) {
        return UriError(uri, i, "duplicate parameter");
      }
      if (amp == std::string_view::npos) break;
      i = amp + 1;
      if (i == uri.size()) return UriError(uri, i, "empty parameter after '&'");
    }
  }
  return out;
}

std::string DeviceUri::ToString() const {
  std::string out = driver;
  if (!devices.empty()) {
    out += "://";
    for (size_t i = 0; i < devices.size(); ++i) {
      if (i) out += ",";
      out += devices[i];
    }
  }
  if (!params.empty()) {
    if (devices.empty()) out += "://";
    char sep = '?';
    for (const auto& [k, v] : params) {
      out += sep;
      out += Encode(k) + "=" + Encode(v);
      sep = '&';
    }
  }
  return out;
}

StatusOr<uint64_t> DeviceUri::GetUint(const std::string& key,
                                      uint64_t default_value, uint64_t min,
                                      uint64_t max) const {
  auto it = params.find(key);
  if (it == params.end()) return default_value;
  const std::string& v = it->second;
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (v.empty() || ec != std::errc() || ptr != v.data() + v.size()) {
    return InvalidArgumentError("device URI parameter %s='%s' is not a number",
                                key.c_str(), v.c_str());
  }
  if (value < min || value > max) {
    return InvalidArgumentError(
        "device URI parameter %s=%llu is outside [%llu, %llu]", key.c_str(),
        (unsigned long long)value, (unsigned long long)min,
        (unsigned long long)max);
  }
  return value;
}

StatusOr<bool> DeviceUri::GetBool(const std::string& key,
                                  bool default_value) const {
  auto it = params.find(key);
  if (it == params.end()) return default_value;
  const std::string& v = it->second;
  if (v == "1" || v == "true" || v == "on") return true;
  if (v == "0" || v == "false" || v == "off") return false;
  return InvalidArgumentError("device URI parameter %s='%s' is not a boolean",
                              key.c_str(), v.c_str());
}

Status DeviceUri::CheckKnownParams(
    std::initializer_list<std::string_view> known) const {
  for (const auto& [k, v] : params) {
    bool found = false;
    for (auto n : known) found |= (k == n);
    if (!found) {
      std::string list;
      for (auto n : known) {
        if (!list.empty()) list += ", ";
        list += n;
      }
      return InvalidArgumentError(
          "device URI parameter '%s' is not known to driver '%s' (known: %s)",
          k.c_str(), driver.c_str(), list.c_str());
    }
  }
  return OkStatus();
}

}  // namespace hal
