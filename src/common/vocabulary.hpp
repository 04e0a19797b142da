// A closed set's names as one array, made from its .def table: the enum's N-th value is the
// table's N-th row, so to_string is an index and parse a search of the same array. A closed set
// declares its enum and this array from one X-macro list; nothing spells a name twice.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ddpbisect {

template <class Enum, size_t N>
const char* vocabulary_name(Enum value, const char* const (&names)[N]) {
  const auto i = static_cast<size_t>(value);
  return i < N ? names[i] : "";
}

template <class Enum, size_t N>
std::optional<Enum> vocabulary_parse(std::string_view text, const char* const (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<Enum>(i);
  return std::nullopt;
}

// Every name, in the table's order, leaving out the empty one (a "none" row).
template <size_t N>
std::vector<std::string> vocabulary_names(const char* const (&names)[N]) {
  std::vector<std::string> out;
  for (const char* n : names)
    if (*n) out.emplace_back(n);
  return out;
}

}  // namespace ddpbisect

// Declares, from LIST (a table's macro of X(Id, name, meaning) rows): `enum class Enum`, its
// names `kEnumNames`, `to_string(Enum)` and `std::optional<Enum> PARSE(std::string_view)`.
#define DDPBISECT_VOCABULARY_ID(id, name, meaning) id,
#define DDPBISECT_VOCABULARY_NAME(id, name, meaning) name,
#define DDPBISECT_DECLARE_VOCABULARY(Enum, LIST, PARSE)                              \
  enum class Enum { LIST(DDPBISECT_VOCABULARY_ID) };                                 \
  inline constexpr const char* k##Enum##Names[] = {LIST(DDPBISECT_VOCABULARY_NAME)}; \
  inline const char* to_string(Enum value) {                                         \
    return vocabulary_name(value, k##Enum##Names);                                   \
  }                                                                                  \
  inline std::optional<Enum> PARSE(std::string_view text) {                          \
    return vocabulary_parse<Enum>(text, k##Enum##Names);                             \
  }
