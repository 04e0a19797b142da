// A small XML 1.0 well-formedness check for what ddpbisect writes (JUnit XML): every character
// allowed by XML, one root element, matching tags, quoted attributes without '<', and every '&'
// a well-formed reference to an allowed character. No DTD, comments or CDATA (we write none).
#pragma once

#include <string>
#include <string_view>

namespace ddpbisect::fuzz {

// "" when `xml` is well-formed, else what is wrong and the byte offset.
std::string xml_problem(std::string_view xml);

}  // namespace ddpbisect::fuzz
