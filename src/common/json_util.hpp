// Reading and writing JSON that holds text we did not write (logs, specs, files of earlier runs)
// without an exception escaping, an assertion or undefined behaviour: such a file can be torn,
// edited or hostile, and a log can hold bytes that are not UTF-8.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace ddpbisect {

// JSON text of `j`; bytes that are not UTF-8 become U+FFFD (plain dump() throws on them).
// Every JSON text ddpbisect writes goes through here.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `v` as a T when it holds one: a boolean; an integer in T's range for an integral T (a
// double is none: converting 1e300 to an integer is undefined); any number for a floating-point
// T; a string. Otherwise (and for other T when json's get<T> throws) nullopt.
template <class T>
std::optional<T> json_get(const nlohmann::json& v) {
  if constexpr (std::is_same_v<T, bool>) {
    if (v.is_boolean()) return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    if (v.is_number_unsigned()) {
      const uint64_t u = v.get<uint64_t>();
      if (u <= static_cast<uint64_t>(L::max())) return static_cast<T>(u);
    } else if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i >= 0 ? static_cast<uint64_t>(i) <= static_cast<uint64_t>(L::max())
                 : std::is_signed_v<T> && i >= static_cast<int64_t>(L::min()))
        return static_cast<T>(i);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (v.is_string()) return v.get<std::string>();
  } else {
    try {
      return v.get<T>();
    } catch (const nlohmann::json::exception&) {
    }
  }
  return std::nullopt;
}

template <class T>
T json_as(const nlohmann::json& v, T fallback) {
  std::optional<T> got = json_get<T>(v);
  return got ? std::move(*got) : std::move(fallback);
}

// The member `key` of `j`; null when `j` is not an object or has no such member (where a const
// operator[] asserts).
inline const nlohmann::json& json_member(const nlohmann::json& j, const std::string& key) {
  static const nlohmann::json null;
  if (!j.is_object()) return null;
  auto it = j.find(key);
  return it == j.end() ? null : *it;
}

// json_as() of the member `key`: `fallback` when it is missing or of another type.
template <class T>
T json_field(const nlohmann::json& j, const std::string& key, T fallback) {
  return json_as<T>(json_member(j, key), std::move(fallback));
}
inline std::string json_field(const nlohmann::json& j, const std::string& key,
                              const char* fallback) {
  return json_field<std::string>(j, key, fallback);
}

// The member `key` as a T; `fallback` when it is missing or null; std::runtime_error("KEY: ...")
// when it holds something else: for records that read back whole or not at all.
template <class T>
T json_strict(const nlohmann::json& j, const std::string& key, T fallback) {
  const nlohmann::json& v = json_member(j, key);
  if (v.is_null()) return fallback;
  if (std::optional<T> got = json_get<T>(v)) return std::move(*got);
  throw std::runtime_error(key + ": unexpected " + std::string(v.type_name()) + " " +
                           json_text(v).substr(0, 40));
}
inline std::string json_strict(const nlohmann::json& j, const std::string& key,
                               const char* fallback) {
  return json_strict<std::string>(j, key, fallback);
}

}  // namespace ddpbisect
