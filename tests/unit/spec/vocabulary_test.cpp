// The vocabularies of spec/passes.def, spec/launchers.def, spec/fault_kinds.def and the
// categories as the loader and the normalized spec see them, and README's lists of them.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "common/text.hpp"
#include "reduce/result.hpp"
#include "spec/fault_kinds.hpp"
#include "spec/launchers.hpp"
#include "spec/loader.hpp"
#include "spec/passes.hpp"
#include "spec/serialize.hpp"

using namespace ddpbisect;

namespace {
const char* kSpec = R"(version: 1
name: t
workload:
  builtin:
    model: [linear, head]
    dataset: {kind: synthetic, samples: 16, seed: 3}
    params: {steps: 4, batch_size: 2}
stages:
  - {name: node, nodes: 2, procs_per_node: 1}
)";

// Every error of loading the spec text, one per line.
std::string errors_in(const std::string& text) {
  LoadResult r = load_spec_text(text, "t.yaml");
  std::string all;
  for (const auto& d : r.errors) all += d.to_string() + "\n";
  return all;
}

std::string errors_of(const std::string& extra) {
  return errors_in(std::string(kSpec) + extra);
}
}  // namespace

TEST(PassVocabulary, DimensionsAreThePassesDimensionsOnceInRunOrder) {
  EXPECT_EQ(reduce_dimensions(), (std::vector<std::string>{"topology", "steps", "samples",
                                                           "components", "features", "params"}));
  for (const auto& p : passes()) EXPECT_TRUE(is_strategy(p.strategy)) << p.name;
}

TEST(PassVocabulary, TheLoaderTakesItsNamesFromTheList) {
  EXPECT_EQ(errors_of("reduce: {strategy: ddmin, dimensions: {steps: false}}\n"), "");
  std::string bad = errors_of("reduce: {strategy: dmin, dimensions: {sample: false}}\n");
  EXPECT_NE(bad.find("reduce.strategy: expected one of default, ddmin, found 'dmin'"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find("did you mean 'samples'"), std::string::npos) << bad;
  EXPECT_NE(strategy_help().find("default (topology, steps, sample_count"), std::string::npos);
}

TEST(LauncherVocabulary, RequiredKeysAndHostCountComeFromTheTable) {
  EXPECT_EQ(launcher_kind_names(), (std::vector<std::string>{"local", "ssh", "slurm", "prefix"}));
  std::string prefix = errors_of("launcher: {kind: prefix}\n");
  EXPECT_NE(prefix.find("launcher.prefix: missing: the prefix launcher needs a command prefix"),
            std::string::npos)
      << prefix;
  EXPECT_NE(prefix.find("launcher.hosts: missing: the prefix launcher needs a list of hosts"),
            std::string::npos)
      << prefix;
  std::string ssh = errors_of("launcher: {kind: ssh, hosts: [a]}\n");
  EXPECT_NE(ssh.find("needs 2 nodes but launcher.hosts lists only 1"), std::string::npos) << ssh;
  EXPECT_EQ(errors_of("launcher: {kind: slurm}\n"), "") << "slurm needs no hosts";
}

TEST(LauncherVocabulary, TheNormalizedSpecWritesTheKeysTheKindReads) {
  LoadResult r = load_spec_text(
      std::string(kSpec) + "launcher: {kind: ssh, hosts: [a, b], options: [-p, '22'], cwd: /w}\n",
      "t.yaml");
  ASSERT_TRUE(r.spec);
  auto l = spec_to_json(*r.spec)["launcher"];
  EXPECT_EQ(l["kind"], "ssh");
  EXPECT_EQ(l["hosts"].size(), 2u);
  EXPECT_EQ(l["cwd"], "/w");
  EXPECT_EQ(l["options"].size(), 2u);
  for (const auto& kind : launcher_kinds())
    for (const auto& key : kind.requires_keys) EXPECT_TRUE(kind.takes(key)) << kind.name << key;
}

// match.signature.category takes the names of common/categories.def, and a misspelt one is an
// error at its line with the name it was meant to be.
TEST(CategoryVocabulary, APinnedSignatureNamesACategoryOfTheTable) {
  EXPECT_EQ(errors_of("match: {signature: {category: nccl_error, exception: NCCLError}}\n"), "");
  EXPECT_NE(errors_of("match: {signature: {category: cat_oom}}\n"), "");
  const std::string bad = errors_of("match: {signature: {category: python_exeption}}\n");
  EXPECT_NE(bad.find("t.yaml:10:31:"), std::string::npos) << bad;
  EXPECT_NE(bad.find("match.signature.category"), std::string::npos) << bad;
  EXPECT_NE(bad.find("python_exception"), std::string::npos) << bad;
}

namespace {
std::string fault_errors(const std::string& fault) {
  return errors_in(R"(version: 1
name: t
workload:
  builtin:
    model: [linear, head]
    dataset: {kind: synthetic, samples: 16, seed: 3}
    params: {steps: 4, batch_size: 2}
    faults:
      - )" + fault +
                   R"(
stages:
  - {name: node, nodes: 2, procs_per_node: 1}
)");
}

// The text of README.md between `before` and the next `until`, with line breaks as spaces.
std::string readme_between(const std::string& before, char until) {
  std::ifstream in(DDPBISECT_SOURCE_DIR "/README.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  for (auto& c : s)
    if (c == '\n') c = ' ';
  size_t at = s.find(before);
  if (at == std::string::npos) return "";
  at += before.size();
  return s.substr(at, s.find(until, at) - at);
}
}  // namespace

// spec/fault_kinds.def: the kinds the loader takes, and which keys each kind reads.
TEST(FaultVocabulary, TheLoaderTakesKindsAndTheirKeysFromTheTable) {
  EXPECT_EQ(fault_kind_names().front(), "raise");
  EXPECT_EQ(fault_kind_names().size(), fault_kinds().size());
  for (const auto& k : fault_kinds()) {
    EXPECT_EQ(parse_fault_kind(to_string(k.kind)), k.kind);
    for (const auto& key : k.required) EXPECT_TRUE(k.takes_key(key)) << to_string(k.kind) << key;
  }
  EXPECT_EQ(fault_errors("{kind: raise, message: boom, requires: {ranks: [1]}}"), "");
  EXPECT_EQ(fault_errors("{kind: hang, mode: collectives}"), "");
  EXPECT_EQ(fault_errors("{kind: unused_parameter, component: head}"), "");

  std::string wrong = fault_errors("{kind: sigkill, message: boom}");
  EXPECT_NE(wrong.find("t.yaml:9:34: error: workload.builtin.faults[0].message: a sigkill fault "
                       "does not read message (only raise does)"),
            std::string::npos)
      << wrong;
  std::string missing = fault_errors("{kind: missing_file}");
  EXPECT_NE(missing.find("workload.builtin.faults[0].path: missing: a missing_file fault needs "
                         "the node-local path it opens"),
            std::string::npos)
      << missing;
  std::string typo = fault_errors("{kind: segfualt}");
  EXPECT_NE(typo.find("did you mean 'segfault'"), std::string::npos) << typo;
}

// README's lists of the planted fault kinds and of report.json's statuses are the tables'.
TEST(FaultVocabulary, TheReadmeListsEveryKindAndEveryReductionStatus) {
  EXPECT_EQ(readme_between("Planted faults (built-in trainer): `kind` is one of ", ';'),
            join(fault_kind_names(), ", "));
  EXPECT_EQ(readme_between("`report.json`: `status` (", ')'),
            join(vocabulary_names(kReductionStatusNames), ", "));
}
