#include <gtest/gtest.h>

#include "probe/doctor.hpp"

using namespace ddpbisect;
using nlohmann::json;

namespace {
json node(const std::string& torch) {
  return {{"python", "3.11.2"},
          {"torch", torch},
          {"cuda", nullptr},
          {"cudnn", nullptr},
          {"nccl", nullptr},
          {"gpus", json::array()},
          {"gpu_driver", nullptr},
          {"mem_available_bytes", 8.0 * (1 << 30)},
          {"disk_free_bytes", 50.0 * (1 << 30)},
          {"paths", {{"/data/train", {{"exists", true}, {"readable", true}, {"dir", true}}}}},
          {"variables", json::object()},
          {"master", {{"reachable", true}, {"offset_s", 0.0}, {"rtt_s", 0.001}}}};
}

const Finding* find(const std::vector<Finding>& fs, FindingStatus status, const std::string& check,
                    int node) {
  for (const auto& f : fs)
    if (f.status == status && f.check == check && f.node == node) return &f;
  return nullptr;
}

std::vector<Finding> run(const std::vector<json>& reports, std::vector<double> offsets = {},
                         json master = {{"listening", true}}) {
  if (offsets.empty()) offsets.assign(reports.size(), 0.0);
  Stage stage{"two", static_cast<int64_t>(reports.size()), 1, "cpu"};
  auto out = node_findings(reports, offsets, master, "10.0.0.1", 29500, true, stage);
  sort_findings(out);
  return out;
}
}  // namespace

TEST(NodeFindings, HealthyNodesOnlyPass) {
  for (const auto& f : run({node("1.13.1"), node("1.13.1"), node("1.13.1")}))
    EXPECT_EQ(f.status, FindingStatus::Pass) << f.check << ": " << f.message;
}

TEST(NodeFindings, TheOddVersionOutIsNamedAndSortedFirst) {
  auto fs = run({node("1.13.1"), node("2.1.0"), node("1.13.1")});
  const Finding* f = find(fs, FindingStatus::Fail, "versions.torch", 1);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("2.1.0"), std::string::npos);
  EXPECT_NE(f->message.find("nodes 0, 2 have 1.13.1"), std::string::npos) << f->message;
  EXPECT_EQ(&fs.front(), f) << "differences between nodes come first";
  EXPECT_EQ(find(fs, FindingStatus::Fail, "versions.torch", 0), nullptr);
}

TEST(NodeFindings, MissingPathOnOneNode) {
  auto n1 = node("1.13.1");
  n1["paths"]["/data/train"]["exists"] = false;
  auto fs = run({node("1.13.1"), n1});
  const Finding* f = find(fs, FindingStatus::Fail, "paths", 1);
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->differs);
  EXPECT_NE(f->message.find("present on node 0"), std::string::npos) << f->message;
}

TEST(NodeFindings, ClockOffsetsWarnThenFail) {
  auto fs = run({node("1"), node("1"), node("1")}, {0.0, 0.5, 30.0});
  EXPECT_NE(find(fs, FindingStatus::Warn, "clock", 1), nullptr);
  EXPECT_NE(find(fs, FindingStatus::Fail, "clock", 2), nullptr);
  EXPECT_EQ(find(fs, FindingStatus::Pass, "clock", -1), nullptr);
}

TEST(NodeFindings, MasterPortTakenAddressForeignOrUnreachable) {
  auto taken =
      run({node("1"), node("1")}, {}, {{"bind_error", "Address already in use"}, {"errno", 98}});
  EXPECT_NE(find(taken, FindingStatus::Fail, "master.port", 0), nullptr);
  auto foreign = run({node("1"), node("1")}, {},
                     {{"bind_error", "Cannot assign requested address"}, {"errno", 99}});
  EXPECT_NE(find(foreign, FindingStatus::Fail, "master.addr", 0), nullptr);
  auto n1 = node("1");
  n1["master"] = {{"reachable", false}, {"error", "timed out"}};
  auto cut = run({node("1"), n1});
  EXPECT_NE(find(cut, FindingStatus::Fail, "master.reach", 1), nullptr);
}

TEST(NodeFindings, AProbeThatDidNotRunIsAFailureNotACrash) {
  auto fs = run({node("1"), json{{"probe_error", "ssh: connect to host n1: refused"}}});
  const Finding* f = find(fs, FindingStatus::Fail, "node.reach", 1);
  ASSERT_NE(f, nullptr);
  EXPECT_NE(f->message.find("refused"), std::string::npos);
}

// Each check alone, on the reports it reads.
TEST(NodeChecks, ResourcesWarnBelowOneGiB) {
  auto low = node("1");
  low["mem_available_bytes"] = 0.5 * (1 << 30);
  low["disk_free_bytes"] = 0.25 * (1 << 30);
  std::vector<Finding> out;
  check_resources({node("1"), low}, out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].check, "memory");
  EXPECT_EQ(out[0].node, 1);
  EXPECT_EQ(out[1].check, "disk");
  EXPECT_NE(out[1].message.find("0.2 GiB"), std::string::npos) << out[1].message;
  out.clear();
  check_resources({node("1"), json(nullptr)}, out);  // a node whose probe did not run
  EXPECT_TRUE(out.empty());
}

TEST(NodeChecks, VariablesThatDifferAreOneWarningWithEveryValue) {
  auto a = node("1"), b = node("1");
  a["variables"] = {{"NCCL_IB_DISABLE", "1"}, {"NCCL_SOCKET_IFNAME", "eth0"}};
  b["variables"] = {{"NCCL_SOCKET_IFNAME", "eth0"}};
  std::vector<Finding> out;
  check_variables({a, b}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].status, FindingStatus::Warn);
  EXPECT_TRUE(out[0].differs);
  EXPECT_NE(out[0].message.find("node 0 = 1"), std::string::npos) << out[0].message;
  EXPECT_NE(out[0].message.find("node 1 = (unset)"), std::string::npos) << out[0].message;
}

TEST(NodeChecks, GpusFewerThanRanksOnlyForCudaStages) {
  auto n = node("1");
  n["gpus"] = json::array({"H200"});
  std::vector<Finding> out;
  check_gpus({n}, Stage{"s", 1, 2, "cuda"}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_NE(out[0].message.find("for 2 ranks"), std::string::npos) << out[0].message;
  out.clear();
  check_gpus({n}, Stage{"s", 1, 2, "cpu"}, out);
  EXPECT_TRUE(out.empty());
}

TEST(NodeChecks, ReachKeepsOnlyTheReportsThatRan) {
  std::vector<json> ok;
  std::vector<Finding> out;
  check_reach({node("1"), json{{"probe_error", "exit 255"}}, json(nullptr)}, ok, out);
  ASSERT_EQ(ok.size(), 3u);
  EXPECT_TRUE(ok[0].is_object());
  EXPECT_TRUE(ok[1].is_null());
  EXPECT_TRUE(ok[2].is_null());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].message.find("the probe did not run on node 2: no output"), 0u);
}
