#pragma once
namespace ddpbisect {
inline constexpr const char* kVersion = "0.1.0";
}
