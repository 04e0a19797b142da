#include "cli/route.hpp"

#include <algorithm>
#include <filesystem>

#include "common/text.hpp"

namespace fs = std::filesystem;

namespace ddpbisect::cli {

namespace {

bool is_flag(const std::string& a) {
  return a.size() > 1 && a[0] == '-';
}

// A spec path rather than a mistyped subcommand: it exists or is named like a spec.
bool looks_like_spec(const std::string& a) {
  std::error_code ec;
  return fs::exists(a, ec) || a.find('/') != std::string::npos || ends_with(a, ".yaml") ||
         ends_with(a, ".yml") || ends_with(a, ".json");
}

// The flag's name as typed: "--out" of "--out=DIR", "-j" of "-j4".
std::string flag_name(const std::string& a) {
  if (a.rfind("--", 0) == 0) return a.substr(0, a.find('='));
  return a.substr(0, 2);
}

// Every spelling of every flag of `app`, and whether it takes a value.
std::vector<std::pair<std::string, bool>> flags_of(const CLI::App& app) {
  std::vector<std::pair<std::string, bool>> out = {{"--help", false}, {"-h", false}};
  for (const CLI::Option* o : app.get_options()) {
    bool value = o->get_expected_max() > 0;
    for (const auto& n : o->get_lnames()) out.emplace_back("--" + n, value);
    for (const auto& n : o->get_snames()) out.emplace_back("-" + n, value);
  }
  return out;
}

}  // namespace

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args) {
    if (a == "--") return false;
    if (a == flag) return true;
  }
  return false;
}

Route route_arguments(const std::vector<std::string>& args,
                      const std::vector<std::string>& commands,
                      const std::set<std::string>& reduce_value_flags) {
  auto known = [&](const std::string& a) {
    return std::find(commands.begin(), commands.end(), a) != commands.end();
  };
  Route r;
  if (args.empty()) {
    r.error =
        "give a spec (ddpbisect SPEC reduces it) or a subcommand; ddpbisect --help lists them";
    return r;
  }
  const std::string& first = args[0];
  if (first == "help") {
    if (args.size() > 1 && !known(args[1])) {
      std::string guess = closest_match(args[1], commands);
      r.error =
          "no subcommand named '" + args[1] + "'" +
          (guess.empty() ? " (" + join(commands, ", ") + ")" : "; did you mean '" + guess + "'?");
      return r;
    }
    r.args = args.size() > 1 ? std::vector<std::string>{args[1], "--help"}
                             : std::vector<std::string>{"--help"};
    return r;
  }
  if (known(first) || first == "--help" || first == "-h" || first == "--version") {
    r.args = args;
    return r;
  }
  // The first word that is neither a flag nor a flag's value.
  size_t word = args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--") {
      word = i + 1 < args.size() ? i + 1 : args.size();
      break;
    }
    if (!is_flag(args[i])) {
      word = i;
      break;
    }
    if (args[i].find('=') == std::string::npos && reduce_value_flags.count(args[i])) ++i;
  }
  if (word < args.size()) {
    const std::string& w = args[word];
    if (known(w)) {  // flags before the subcommand: `ddpbisect --json validate x.yaml`
      r.args = {w};
      for (size_t i = 0; i < args.size(); ++i)
        if (i != word) r.args.push_back(args[i]);
      return r;
    }
    if (!looks_like_spec(w)) {
      std::string guess = closest_match(w, commands);
      if (!guess.empty()) {
        r.error = "'" + w + "' is not a subcommand; did you mean '" + guess + "'?";
        return r;
      }
    }
  }
  r.implicit_reduce = true;
  r.args = {"reduce"};
  r.args.insert(r.args.end(), args.begin(), args.end());
  return r;
}

std::string unknown_flag(const CLI::App& all, const CLI::App& sub,
                         const std::vector<std::string>& args) {
  const auto flags = flags_of(sub);
  auto find = [&](const std::string& n) {
    return std::find_if(flags.begin(), flags.end(), [&](const auto& f) { return f.first == n; });
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") break;
    if (!is_flag(a)) continue;
    const std::string name = flag_name(a);
    auto it = find(name);
    if (it != flags.end()) {
      bool attached = a.find('=') != std::string::npos || (a[1] != '-' && a.size() > 2);
      if (it->second && !attached) ++i;  // its value, which may start with '-'
      continue;
    }
    std::vector<std::string> names;
    for (const auto& f : flags)
      if (f.first.rfind("--", 0) == 0 &&
          std::find(names.begin(), names.end(), f.first) == names.end())
        names.push_back(f.first);
    std::string msg = "unknown flag '" + name + "'";
    std::string guess = closest_match(name, names);
    if (!guess.empty()) return msg + "; did you mean '" + guess + "'?";
    std::vector<std::string> owners;
    for (const CLI::App* other : all.get_subcommands([](const CLI::App*) { return true; })) {
      if (other == &sub) continue;
      auto of = flags_of(*other);
      if (std::any_of(of.begin(), of.end(), [&](const auto& f) { return f.first == name; }))
        owners.push_back(other->get_name());
    }
    if (!owners.empty())
      return msg + ": it is a flag of " + join(owners, ", ") + ", not of " + sub.get_name();
    return msg + " (" + sub.get_name() + "'s flags: " + join(names, ", ") + ")";
  }
  return "";
}

}  // namespace ddpbisect::cli
