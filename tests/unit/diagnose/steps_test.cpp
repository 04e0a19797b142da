// The named steps of diagnose on hand-made events and facts (diagnose_steps.hpp).
#include "diagnose/diagnose_steps.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "console.hpp"
#include "diagnose/diagnosis.hpp"
#include "diagnose/frames.hpp"

using namespace ddpbisect;

namespace {
Event error(std::optional<int> rank, const std::string& category, const std::string& exception,
            const std::string& message, long long order = 0) {
  Event e;
  e.origin.rank = rank;
  if (rank) e.origin.rank_from = "prefix";
  e.category = category;
  e.exception = exception;
  e.message = message;
  e.order = order;
  e.source = "console.log";
  return e;
}

Frame user(const std::string& file, const std::string& func) {
  return {file, 1, func, true};
}
Frame lib(const std::string& file, const std::string& func) {
  return {file, 1, func, false};
}

ProcessReport report(std::optional<int> rank, int exit_code, bool root = false) {
  ProcessReport r;
  r.origin.rank = rank;
  r.exit_code = exit_code;
  r.signal = exit_code < 0 ? -exit_code : 0;
  r.root_cause = root;
  r.source = "console.log";
  r.text = "torchrun: exitcode " + std::to_string(exit_code);
  return r;
}

Position position(int rank, const std::string& kind, long long seq, const std::string& op,
                  long long enqueued = -1, bool timed_out = true) {
  Position p;
  p.rank = rank, p.kind = kind, p.seq = seq, p.op = op, p.last_enqueued = enqueued;
  p.timed_out = timed_out;
  return p;
}
}  // namespace

TEST(Candidates, ALaunchersExitIsExplainedByTheRanksOwnError) {
  Facts facts;
  facts.reports = {report(1, 1, true), report(0, -9)};
  std::vector<Event> c =
      find_candidates({error(1, "python_exception", "ValueError", "bad")}, facts, {});
  ASSERT_EQ(c.size(), 3u);  // the error and two exits
  attribute_ranks(c, facts);
  fold_exits(c, facts);
  ASSERT_EQ(c.size(), 2u);  // rank 1's exit is its ValueError; rank 0's SIGKILL stays
  EXPECT_TRUE(c[0].first_observed);
  EXPECT_EQ(c[1].exception, "SIGKILL");
  EXPECT_EQ(c[1].category, "signal");  // no memory evidence
}

TEST(Candidates, MemoryEvidenceMakesADeathHostOom) {
  Facts facts;
  facts.reports = {report(2, -9)};
  facts.reports[0].origin.pid = 48214;
  Event kernel =
      error(std::nullopt, "host_oom", "", "Out of memory: Killed process 48214 (python)");
  std::vector<Event> c = find_candidates({kernel}, facts, {});
  attribute_ranks(c, facts);
  fold_exits(c, facts);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].origin.rank, 2);
  EXPECT_EQ(c[0].category, "host_oom");
  EXPECT_EQ(c[0].exception, "SIGKILL");
  EXPECT_NE(c[0].message.find("Killed process 48214"), std::string::npos);
  // A memory monitor's growth is evidence too; without it a bare SIGKILL stays a signal.
  Facts grown;
  grown.reports = {report(1, -9)};
  for (double gb : {4.0, 9.0, 30.0}) {
    MemorySample m;
    m.origin.rank = 1;
    m.bytes = gb * (1 << 30);
    grown.memory.push_back(m);
  }
  c = find_candidates({}, grown, {});
  fold_exits(c, grown);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].category, "host_oom");
}

TEST(Ranks, EverySourceOfARank) {
  Facts facts;
  facts.local_to_global["console.log"] = {{3, 7}};
  facts.pids.push_back({31337, 2, std::nullopt, "rank2.log"});
  facts.reports = {report(5, 1, true)};
  Event local = error(std::nullopt, "signal", "SIGSEGV", "segfault");
  local.origin.local_rank = 3;
  Event by_pid = error(std::nullopt, "host_oom", "SIGKILL", "killed");
  by_pid.origin.pid = 31337;
  Event stated = error(std::nullopt, "comm_timeout", "", "[Rank 4] Watchdog caught collective");
  Event unranked = error(std::nullopt, "python_exception", "KeyError", "'x'");
  std::vector<Event> events = {local, by_pid, stated, unranked};
  attribute_ranks(events, facts);
  EXPECT_EQ(events[0].origin.rank, 7);
  EXPECT_EQ(events[1].origin.rank, 2);
  EXPECT_EQ(events[2].origin.rank, 4);
  EXPECT_EQ(events[3].origin.rank, 5);  // the launcher's report of an exit with a code
  EXPECT_EQ(events[3].origin.rank_from, "launcher's report");
}

TEST(Ranks, EchoesThatPointAndElimination) {
  Facts facts;
  facts.ranks_seen = {0, 1, 2, 3};
  facts.pointers.push_back({0, 1, false, 0, "closed by localRank 1", "console.log", 5});
  facts.reports = {report(0, 1, true)};
  std::vector<Event> events = {error(std::nullopt, "python_exception", "RuntimeError", "dtype"),
                               error(0, "peer_closed", "", "closed")};
  attribute_ranks(events, facts);
  EXPECT_EQ(events[0].origin.rank, 1);  // the echoes outweigh the banner's one-second order
  // Two ranks, one printed an echo: the unranked abort is the other's.
  Facts two;
  two.ranks_seen = {0, 1};
  events = {error(std::nullopt, "collective_mismatch", "gloo::EnforceNotMet", "op.preamble"),
            error(0, "peer_closed", "RuntimeError", "Connection reset by peer")};
  attribute_ranks(events, two);
  EXPECT_EQ(events[0].origin.rank, 1);
  // Nothing settles it: the rank stays unknown.
  Facts none;
  events = {error(std::nullopt, "python_exception", "TypeError", "x")};
  attribute_ranks(events, none);
  EXPECT_FALSE(events[0].origin.rank);
}

// The only rank the logs name shows a traceback without its exception line; the exception
// line, quoted apart, carries no tag: it is that rank's. With another rank in the logs, or a
// ranked failure that names its own exception, it stays unknown.
TEST(Ranks, AnUnrankedExceptionCompletesTheOnlyRanksHeadlessTraceback) {
  Facts facts;
  facts.ranks_seen = {4};
  std::vector<Event> events = {error(std::nullopt, "python_exception", "ValueError", "too long"),
                               error(4, "python_exception", "", "")};
  attribute_ranks(events, facts);
  EXPECT_EQ(events[0].origin.rank, 4);
  Facts two;
  two.ranks_seen = {4, 5};
  events = {error(std::nullopt, "python_exception", "ValueError", "too long"),
            error(4, "python_exception", "", ""), error(5, "peer_closed", "", "closed")};
  attribute_ranks(events, two);
  EXPECT_FALSE(events[0].origin.rank);
  events = {error(std::nullopt, "python_exception", "ValueError", "too long"),
            error(4, "python_exception", "KeyError", "k")};
  attribute_ranks(events, facts);
  EXPECT_FALSE(events[0].origin.rank);
}

TEST(Hang, TheRankThatIsNotWhereTheOthersAre) {
  std::set<int> world = {0, 1, 2, 3};
  std::vector<Event> timeouts;
  for (int r : {0, 1, 3}) timeouts.push_back(error(r, "comm_timeout", "", "Watchdog caught"));
  Facts facts;
  // Another op at the same sequence number.
  for (int r : {0, 1, 2}) facts.positions.push_back(position(r, "watchdog", 808, "ALLREDUCE"));
  facts.positions.push_back(position(3, "watchdog", 808, "BROADCAST"));
  auto v = attribute_hang(timeouts, {}, facts, world, false);
  ASSERT_TRUE(v && v->culprit);
  EXPECT_EQ(*v->culprit, 3);
  // Behind by its own counter.
  Facts behind;
  for (int r : {0, 1, 2}) behind.positions.push_back(position(r, "enqueued", 1580, "", 1582));
  behind.positions.push_back(position(3, "enqueued", -1, "", 1579, false));
  v = attribute_hang(timeouts, {}, behind, world, false);
  ASSERT_TRUE(v && v->culprit);
  EXPECT_EQ(*v->culprit, 3);
  // Its watchdog never fired.
  v = attribute_hang(timeouts, {}, Facts(), world, false);
  ASSERT_TRUE(v && v->culprit);
  EXPECT_EQ(*v->culprit, 2);
  EXPECT_EQ(v->waiting, (std::vector<int>{0, 1, 3}));
}

TEST(Hang, StacksOutsideAnyCollectiveAndTheCulpritsFrame) {
  std::vector<Event> stacks;
  for (int r : {0, 1, 3}) {
    Event s = error(r, "", "", "");
    s.kind = EventKind::Stack;
    s.frames = {user("train.py", "main"), user("metrics.py", "reduce_mean"),
                lib("/x/torch/distributed/distributed_c10d.py", "all_reduce")};
    stacks.push_back(s);
  }
  Event queue = error(2, "", "", "");
  queue.kind = EventKind::Stack;
  queue.frames = {user("train.py", "main"), user("prefetch.py", "__next__"),
                  lib("/usr/lib/python3.11/queue.py", "get")};
  stacks.push_back(queue);
  auto v = attribute_hang({}, stacks, Facts(), {0, 1, 2, 3}, true);
  ASSERT_TRUE(v && v->culprit);
  EXPECT_EQ(*v->culprit, 2);
  ASSERT_FALSE(v->frames.empty());
  Event h;
  h.frames = v->frames;
  EXPECT_EQ(frame_key(h.user_frame()), "prefetch.py:__next__");
  // No evidence of a hang at all: no verdict.
  EXPECT_FALSE(
      attribute_hang({error(0, "python_exception", "E", "x")}, {}, Facts(), {0, 1}, false));
}

TEST(Root, RealPrimariesFirstThenEarliest) {
  Event fragment = error(0, "python_exception", "", "", 1);
  Event echo = error(1, "peer_closed", "RuntimeError", "Connection closed by peer", 2);
  Event real = error(2, "python_exception", "ValueError", "bad", 3);
  Event handled = error(3, "python_exception", "OSError", "logged", 0);
  handled.handled = true;
  auto root = choose_root({fragment, echo, real, handled}, false);
  ASSERT_TRUE(root);
  EXPECT_EQ(*root, 2u);
  // One failure every rank hit alike: the lowest rank, wherever it printed.
  Event a = error(1, "ddp_unused_parameters", "RuntimeError", "Expected to have finished", 1);
  Event b = error(0, "ddp_unused_parameters", "RuntimeError", "Expected to have finished", 9);
  root = choose_root({a, b}, false);
  EXPECT_EQ(*root, 1u);
  // A line where two processes' output mixed loses to a clean copy.
  Event mixed = error(std::nullopt, "host_oom", "SIGABRT", "memory allocation of memory ...", 1);
  mixed.garbled = true;
  Event clean = error(std::nullopt, "host_oom", "SIGABRT", "memory allocation of 2 bytes", 2);
  root = choose_root({mixed, clean}, false);
  EXPECT_EQ(*root, 1u);
  // What the program handled counts only when a launcher says something failed.
  EXPECT_FALSE(choose_root({handled}, false));
  EXPECT_TRUE(choose_root({handled}, true));
}

TEST(EchoesAndExplanation, UnknownRankIsSaidSo) {
  Event root = error(std::nullopt, "python_exception", "TypeError", "unexpected keyword");
  std::vector<Event> c = {root, error(1, "peer_closed", "RuntimeError", "closed")};
  auto ranks = summarize_ranks(c, root, {0, 1}, {}, std::nullopt);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_FALSE(ranks[1].echo_of);  // an echo of an unknown rank names none
  Diagnosis d;
  d.failed = true;
  d.root = root;
  d.ranks = ranks;
  std::string text = explain_diagnosis(d);
  EXPECT_NE(text.find("An unknown rank failed first"), std::string::npos) << text;
  EXPECT_EQ(text.find("-1"), std::string::npos);
  EXPECT_TRUE(d.to_json()["root_cause"]["rank"].is_null());
}

TEST(DebugRerun, AMismatchExplainsAHangButAnotherFailureExplainsNothing) {
  Signature hang{"hang", "", "train.py:step", "", {1}, {}};
  Signature mismatch{"collective_mismatch", "RuntimeError", "train.py:save", "", {0}, {}};
  Signature crash{"signal", "SIGSEGV", "", "", {0}, {}};
  Signature other{"python_exception", "ValueError", "data.py:load", "", {0}, {}};
  EXPECT_TRUE(debug_rerun_explains(hang, hang));
  EXPECT_TRUE(debug_rerun_explains(hang, mismatch));
  EXPECT_FALSE(debug_rerun_explains(hang, crash));  // DETAIL's crash on 2.x Gloo is no cause
  EXPECT_FALSE(debug_rerun_explains(other, mismatch));
  EXPECT_FALSE(debug_rerun_explains(other, crash));
}

TEST(Explain, TimeoutsOnEveryRankWithNoPrimaryAreAHangOfAnUnknownRank) {
  Diagnosis d = diagnose_console(
      "world_size: 4\n"
      "[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600001 milliseconds\n"
      "[rank1]:[E ProcessGroupNCCL.cpp:1] [Rank 1] Watchdog caught collective operation timeout: "
      "WorkNCCL(SeqNum=7, OpType=ALLREDUCE, Timeout(ms)=600000) ran for 600002 milliseconds\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "hang");
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_NE(d.root.message.find("Watchdog caught collective operation timeout"), std::string::npos);
}

TEST(Explain, AnAbortWithoutWhatTakesTheWrappedErrorOfTheNextLine) {
  Diagnosis d = diagnose_console(
      "terminate called after throwing an instance of 'c10::Error'\n"
      "[E ProcessGroupNCCL.cpp:1] Process group watchdog thread terminated with exception: CUDA "
      "error: an illegal memory access was encountered\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "cuda_error");
  EXPECT_EQ(d.root.exception, "c10::Error");
  EXPECT_NE(d.root.message.find("illegal memory access"), std::string::npos);
}

TEST(Explain, AbortsPrintedBackToBackWaitForTheirWhat) {
  Diagnosis d = diagnose_console(
      "terminate called after throwing an instance of 'c10::CUDAError'\n"
      "terminate called after throwing an instance of 'terminate called after throwing an "
      "instance of 'c10::CUDAError'\n"
      "  what():  CUDA error: unknown error\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "cuda_error");
  EXPECT_EQ(d.root.exception, "c10::CUDAError");
  EXPECT_EQ(d.root.message, "CUDA error: unknown error");
}

TEST(Explain, ACutTracebackReportsTheErrorLoggedJustBeforeIt) {
  Diagnosis d = diagnose_console(
      "[E socket.cpp:1] [c10d] The server socket has failed to listen on any local network "
      "address.\n"
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 9, in main\n"
      "    dist.init_process_group('nccl')\n"
      "  File \"/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py\", line 5, "
      "in init_process_group\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "infra");
  EXPECT_EQ(d.signature.frame, "train.py:main");
}

TEST(Explain, ATruncatedCopyNeverReplacesTheCompleteTraceback) {
  Diagnosis d = diagnose_console(
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 3, in main\n"
      "    step()\n"
      "ValueError: bad shape\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3.10/runpy.py\", line 196, in _run_module_as_main\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "ValueError");
  EXPECT_EQ(d.signature.frame, "train.py:main");
}

TEST(Explain, NcclWarnLinesAreTheErrorTheyQuoteAndBenignOnesNoFailure) {
  Diagnosis oom = diagnose_console(
      "host:1:2 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer\n"
      "host:1:3 [0] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n");
  ASSERT_TRUE(oom.failed);
  EXPECT_EQ(oom.root.category, "cuda_oom");
  Diagnosis dup = diagnose_console(
      "host:1:2 [0] init.cc:497 NCCL WARN Duplicate GPU detected : rank 1 and rank 0 both on CUDA "
      "device 1000\n");
  ASSERT_TRUE(dup.failed);
  EXPECT_EQ(dup.root.category, "nccl_error");
  EXPECT_FALSE(diagnose_console("host:1:2 [0] misc/ibvwrap.cc:103 NCCL WARN Failed to open "
                                "libibverbs.so[.1]\n")
                   .failed);
}

TEST(Explain, AKernelAssertionIsACudaErrorWithoutATraceback) {
  Diagnosis d = diagnose_console(
      "/src/aten/native/cuda/Indexing.cu:1292: indexSelectLargeIndex: block: [1,0,0], thread: "
      "[2,0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "cuda_error");
  EXPECT_NE(d.root.message.find("srcIndex < srcSelectDimSize"), std::string::npos);
}

TEST(Explain, AnEchoWithNoPrimaryAnywhereIsTheErrorItQuotes) {
  Diagnosis d = diagnose_console(
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1, remote process "
      "exited or there was a network error, NCCL version 2.21.5\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "nccl_error");
  EXPECT_EQ(d.root.exception, "torch.distributed.DistBackendError");
}

TEST(Explain, OlderNcclWarnLinesWithoutTheNcclWord) {
  Diagnosis d = diagnose_console(
      "host:1:2 [0] include/socket.h:360 WARN Call to connect failed : Connection timed out\n"
      "host:1:3 [0] include/socket.h:371 WARN Connection closed by remote peer\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "nccl_error");
  EXPECT_EQ(d.root.exception, "");
}

TEST(Explain, AnErrorPrintedBareAndWithItsTracebackIsOneErrorWithItsFrames) {
  Diagnosis d = diagnose_console(
      "[rank0]: RuntimeError: shapes differ in the loss\n"
      "Traceback (most recent call last):\n"
      "  File \"/home/u/train.py\", line 7, in step\n"
      "    loss = f(x)\n"
      "RuntimeError: shapes differ in the loss\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "RuntimeError");
  EXPECT_EQ(d.signature.frame, "train.py:step");
  EXPECT_EQ(d.root.origin.rank, 0);  // the bare copy's rank
}

TEST(Explain, ATracebackWhoseHeaderWasLostStartsAtItsFirstFrame) {
  Diagnosis d = diagnose_console(
      "    engine = build(args)\n"
      "  File \"/work/app/config.py\", line 260, in verify\n"
      "    raise ValueError(\n"
      "ValueError: heads must be divisible by the tensor parallel size\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "ValueError");
  EXPECT_EQ(d.signature.frame, "config.py:verify");
}

TEST(Explain, AnExceptionLineWithoutMessageTakesTheTextAfterTheBlankLine) {
  Diagnosis d = diagnose_console(
      "Traceback (most recent call last):\n"
      "  File \"/home/u/test.py\", line 4, in main\n"
      "    broadcast(t)\n"
      "pkg.utils.DistributedOperationException:\n"
      "\n"
      "Cannot apply desired operation due to shape mismatches. All shapes must be valid.\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "collective_mismatch");
  EXPECT_EQ(d.root.message.rfind("Cannot apply desired operation", 0), 0u) << d.root.message;
}

TEST(Explain, TorchelasticsJsonErrorRecordIsTheErrorItNames) {
  Diagnosis d = diagnose_console(
      "[ERROR] 2021-09-13 22:18:26,678 error_handler: {\n"
      "  \"message\": {\n"
      "    \"message\": \"RendezvousConnectionError: The connection to the C10d store has "
      "failed. See inner exception for details.\",\n"
      "    \"extraInfo\": {\n"
      "      \"py_callstack\": \"Traceback (most recent call last):\\n  File \\\"/x/run.py\\\", "
      "line 3, in main\\n\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "rendezvous");
  EXPECT_EQ(d.root.exception, "RendezvousConnectionError");
  EXPECT_FALSE(d.root.origin.rank);
}

TEST(Hang, AWatchdogsTimedOutWorkIsNotBehindAnotherRanksLastEnqueued) {
  std::set<int> world = {0, 1, 2};
  std::vector<Event> timeouts;
  for (int r : {0, 1, 2}) timeouts.push_back(error(r, "comm_timeout", "", "Watchdog caught"));
  Facts facts;
  // All three time out in work 7753; the "last enqueued" lines of ranks 0 and 1 say 7755 and
  // rank 2's was cut from the excerpt: it only says rank 2 enqueued at least 7753.
  for (int r : {0, 1, 2}) facts.positions.push_back(position(r, "watchdog", 7753, "ALLREDUCE"));
  for (int r : {0, 1}) facts.positions.push_back(position(r, "enqueued", 7753, "", 7755));
  auto v = attribute_hang(timeouts, {}, facts, world, false);
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->culprit);
  // Rank 2's own counter, when it is there, still puts it behind.
  facts.positions.push_back(position(2, "enqueued", 7753, "", 7753));
  v = attribute_hang(timeouts, {}, facts, world, false);
  ASSERT_TRUE(v && v->culprit);
  EXPECT_EQ(*v->culprit, 2);
}

TEST(Ranks, TheStoresServerIsRankZeroUnderEnvRendezvous) {
  const std::string tb =
      "Traceback (most recent call last):\n"
      "  File \"train.py\", line 9, in <module>\n"
      "    dist.init_process_group(\"nccl\", init_method=\"env://\")\n"
      "  File \"/usr/lib/python3/site-packages/torch/distributed/distributed_c10d.py\", line 400, "
      "in init_process_group\n"
      "    store, rank, world_size = next(rendezvous(url))\n"
      "  File \"/usr/lib/python3/site-packages/torch/distributed/rendezvous.py\", line 143, in "
      "_env_rendezvous_handler\n"
      "    store = TCPStore(master_addr, master_port, world_size, start_daemon)\n";
  Diagnosis d = diagnose_console(tb + "RuntimeError: Address already in use\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.origin.rank, 0);
  EXPECT_NE(d.root.origin.rank_from.find("store"), std::string::npos);
  // A client's failure to connect says nothing about which rank it was.
  d = diagnose_console(tb + "RuntimeError: Connection refused\n");
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
}

TEST(Ranks, TheDeviceACudaOutOfMemoryNamesAboveZeroIsItsLocalRank) {
  auto oom = [](const std::string& gpu) {
    return diagnose_console(
        "Traceback (most recent call last):\n"
        "  File \"train.py\", line 5, in step\n"
        "    loss.backward()\n"
        "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.14 GiB (GPU " +
        gpu + "; 31.75 GiB total capacity; 28.28 GiB already allocated)\n");
  };
  Diagnosis d = oom("5");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "cuda_oom");
  EXPECT_EQ(d.root.origin.rank, 5);
  EXPECT_EQ(d.confidence, "medium");
  // Lines that name their node come from several nodes: a local rank is no global rank.
  d = diagnose_console(
      "[gpu187:1]:Traceback (most recent call last):\n"
      "[gpu187:1]:  File \"train.py\", line 5, in step\n"
      "[gpu187:1]:torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB "
      "(GPU 1; 79.35 GiB total capacity)\n");
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(d.root.exception, "torch.cuda.OutOfMemoryError");
  // GPU 0 is what every rank calls its only visible device: no rank from it.
  d = oom("0");
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(d.confidence, "low");
}

// Device 0 exists wherever CUDA runs: an invalid ordinal on a node of two ranks is local rank
// 1's; on a node of more, any rank above 0 could be it.
TEST(Ranks, AnInvalidDeviceOrdinalOnANodeOfTwoIsLocalRankOne) {
  auto ordinal = [](const std::string& launch) {
    return diagnose_console("$ python -m torch.distributed.launch " + launch +
                            " train.py\n"
                            "Traceback (most recent call last):\n"
                            "  File \"train.py\", line 107, in <module>\n"
                            "    torch.cuda.set_device(args.local_rank)\n"
                            "RuntimeError: CUDA error: invalid device ordinal\n");
  };
  Diagnosis d = ordinal("--nproc_per_node=2");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "cuda_error");
  EXPECT_EQ(d.root.origin.rank, 1);
  d = ordinal("--nproc_per_node 4");
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
  d = ordinal("");
  ASSERT_TRUE(d.failed);
  EXPECT_FALSE(d.root.origin.rank);
}

TEST(Root, OneFailureSeveralRanksHitAlikeWithoutTimesNamesThemAllAndNoRank) {
  const std::string alike =
      "[rank0]: Traceback (most recent call last):\n"
      "[rank0]:   File \"train.py\", line 12, in <module>\n"
      "[rank0]:     load(path)\n"
      "[rank0]: FileNotFoundError: [Errno 2] No such file or directory: 'data/shard0.bin'\n"
      "[rank3]: Traceback (most recent call last):\n"
      "[rank3]:   File \"train.py\", line 12, in <module>\n"
      "[rank3]:     load(path)\n"
      "[rank3]: FileNotFoundError: [Errno 2] No such file or directory: 'data/shard3.bin'\n";
  Diagnosis d = diagnose_console(alike);
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "FileNotFoundError");
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(d.rank_candidates, (std::vector<int>{0, 3}));
  EXPECT_EQ(d.unknown_rank_why(),
            "ranks 0, 3 failed alike and no time or launcher report says which came first");
  // The signature carries the ranks it could be, not none.
  EXPECT_EQ(d.signature.ranks, (std::vector<int>{0, 3}));
  // Failures that differ (here in where they were raised) are not one failure: the first
  // printed is the root, as before.
  std::string apart = alike;
  const std::string at = "line 12, in <module>";
  apart.replace(apart.rfind(at), at.size(), "line 40, in main");
  d = diagnose_console(apart);
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.origin.rank, 0);
  EXPECT_TRUE(d.rank_candidates.empty());
  EXPECT_EQ(d.signature.ranks, (std::vector<int>{0}));
}

TEST(Root, ATwoRankMismatchNamesBothRanksAndNeitherIsGuessed) {
  const std::string mismatch =
      "[rank2]: RuntimeError: Detected mismatch between collectives on ranks. Rank 2 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=32, OpType=ALLREDUCE), but Rank 3 is "
      "running collective: CollectiveFingerPrint(SequenceNumber=0OpType=GATHER).\n";
  Diagnosis d = diagnose_console(mismatch);
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "collective_mismatch");
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(d.rank_candidates, (std::vector<int>{2, 3}));
  EXPECT_EQ(d.confidence, "low");
  nlohmann::json j = d.to_json();
  EXPECT_EQ(j["root_cause"]["rank_candidates"], nlohmann::json::array({2, 3}));
  // The evidence and `explain` say why in the same words, from one place.
  const std::string why =
      "the error names ranks 2 and 3 and nothing says which took the other path";
  EXPECT_EQ(d.unknown_rank_why(), why);
  EXPECT_NE(std::find(d.evidence.begin(), d.evidence.end(), "rank unknown: " + why),
            d.evidence.end());
  d.last_spawned_local_rank = 1;
  EXPECT_NE(
      d.unknown_rank_why().find(why + "; the launcher's failed command line has --local_rank=1"),
      std::string::npos);
  d.root.origin.rank = 2;
  EXPECT_EQ(d.unknown_rank_why(), "");
}

TEST(Root, AMismatchCutAfterThePrintersSideNamesNoRank) {
  // The message names the printer's collective; the excerpt ends before the other side's.
  Diagnosis d = diagnose_console(
      "RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running "
      "collective: CollectiveFingerPrint(SequenceNumber=21, OpType=BROADCAST, TensorShape=[1], "
      "TensorDtypes=Long, TensorDeviceTypes=TensorOptions(dtype=float (default), device=cuda, "
      "layou\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "collective_mismatch");
  EXPECT_FALSE(d.root.origin.rank);
  EXPECT_EQ(d.rank_candidates, (std::vector<int>{1}));
  EXPECT_NE(d.unknown_rank_why().find("only rank 1's side of the mismatch"), std::string::npos)
      << d.unknown_rank_why();
}

TEST(Root, ACompletePrefixedTracebackIsHighConfidenceWithItsEvidence) {
  Diagnosis d = diagnose_console(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 7, in step\n"
      "[rank1]:     x = y\n"
      "[rank1]: NameError: name 'y' is not defined\n");
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.origin.rank, 1);
  EXPECT_EQ(d.confidence, "high");
  ASSERT_GE(d.evidence.size(), 3u);
  EXPECT_NE(d.evidence[1].find("rank 1 from prefix"), std::string::npos) << d.evidence[1];
  EXPECT_NE(d.evidence.back().find("train.py"), std::string::npos) << d.evidence.back();
}

TEST(Root, CtrlCIsTheUsersStopAHangWhenItWasWaitingAndNeverACause) {
  auto interrupted = [](const std::string& fn) {
    return "Traceback (most recent call last):\n"
           "  File \"train.py\", line 93, in <module>\n"
           "  File \"/usr/lib/python3.7/multiprocessing/connection.py\", line 920, in " +
           fn + "\nKeyboardInterrupt\n";
  };
  Diagnosis d = diagnose_console(interrupted("wait"));
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.category, "hang");
  EXPECT_EQ(d.root.exception, "");
  EXPECT_FALSE(d.root.origin.rank);
  // Stopped while computing: the user's choice, not a failure.
  EXPECT_FALSE(diagnose_console(interrupted("forward")).failed);
  // A rank's real error before the interrupt is the cause.
  d = diagnose_console(
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"train.py\", line 7, in step\n"
      "[rank1]: ValueError: bad shape\n" +
      interrupted("wait"));
  ASSERT_TRUE(d.failed);
  EXPECT_EQ(d.root.exception, "ValueError");
  EXPECT_EQ(d.root.origin.rank, 1);
}
