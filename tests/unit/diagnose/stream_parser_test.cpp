#include "diagnose/stream_parser.hpp"

#include <gtest/gtest.h>

#include <optional>

#include "common/text.hpp"
#include "diagnose/categories.hpp"
#include "diagnose/frames.hpp"

using namespace ddpbisect;

namespace {
std::vector<Event> parse(const std::string& text) {
  StreamParser p(Origin(), "test.log");
  long long order = 0;
  for (const auto& l : split(text, '\n')) {
    CleanLine cl;
    cl.text = l;
    p.line(cl, -1, order++);
  }
  p.finish();
  return p.events();
}

const Event* first_error(const std::vector<Event>& events) {
  for (const auto& e : events)
    if (e.kind == EventKind::Error) return &e;
  return nullptr;
}

// The first error of a text, a copy: no pointer into a parse that is gone.
std::optional<Event> first_error_of(const std::string& text) {
  std::vector<Event> events = parse(text);
  const Event* e = first_error(events);
  return e ? std::optional<Event>(*e) : std::nullopt;
}
}  // namespace

TEST(StreamParser, TracebackStaysOpenAcrossForeignLines) {
  auto events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/job/main.py\", line 5, in <module>\n"
      "2022-04-11 12:25:47 INFO Train Epoch: 3\n"
      "Learning rate = [0.007]\tLoss = 0.34\n"
      "  File \"/job/data.py\", line 61, in load\n"
      "    x = table[key]\n"
      "KeyError: 33\n");
  const Event* e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "KeyError");
  EXPECT_EQ(e->message, "33");
  EXPECT_EQ(frame_key(e->user_frame()), "data.py:load");
}

// The state line our Python hook prints as a process exits is not part of the job's message.
TEST(StreamParser, OurStateLineAfterATracebackIsNotItsMessage) {
  auto events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/usr/bin/torchrun\", line 33, in <module>\n"
      "AttributeError: 'NoneType' object has no attribute 'get'\n"
      "DDPBISECT_STATE {\"rank\":0,\"pid\":9,\"role\":\"process\",\"state\":\"exiting\"}\n"
      "the job's own line after it\n");
  const Event* e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "AttributeError");
  EXPECT_EQ(e->message, "'NoneType' object has no attribute 'get'\nthe job's own line after it");
}

TEST(StreamParser, ChainKeepsTheCauseAndBorrowsAUserFrame) {
  auto events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3.10/site-packages/torch/serialization.py\", line 944, in save\n"
      "RuntimeError: PytorchStreamWriter failed writing file data/1661\n"
      "\n"
      "During handling of the above exception, another exception occurred:\n"
      "\n"
      "Traceback (most recent call last):\n"
      "  File \"/job/trainer.py\", line 204, in save_checkpoint\n"
      "RuntimeError: unexpected pos 2221367680\n");
  const Event* e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(events.size(), 1u);
  EXPECT_EQ(e->message.rfind("PytorchStreamWriter failed writing file", 0), 0u);
  EXPECT_NE(e->message.find("unexpected pos"), std::string::npos);  // the chain is kept
  EXPECT_EQ(frame_key(e->user_frame()), "trainer.py:save_checkpoint");
}

TEST(StreamParser, NestedAndRemoteTracebacksGiveTheRealException) {
  auto events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/job/engine.py\", line 38, in train_one_epoch\n"
      "RuntimeError: Caught RuntimeError in DataLoader worker process 3.\n"
      "Original Traceback (most recent call last):\n"
      "  File \"/job/my_mosaic.py\", line 12, in _mosaic\n"
      "IndexError: list index out of range\n");
  const Event* e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "IndexError");
  EXPECT_EQ(frame_key(e->user_frame()), "my_mosaic.py:_mosaic");
  // Ray re-raises a remote error with its frames right after the wrapper's line.
  events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/v/main_ppo.py\", line 72, in run_ppo\n"
      "ray.exceptions.RayTaskError(KeyError): ray::main_task() (pid=2931)\n"
      "  File \"/v/naive.py\", line 53, in __call__\n"
      "KeyError: 'reward_model'\n");
  e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "KeyError");
  EXPECT_EQ(frame_key(e->user_frame()), "naive.py:__call__");
  // torch.distributed.checkpoint names the rank whose traceback it carries.
  events = parse(
      "Traceback (most recent call last):\n"
      "  File \"/job/ckpt.py\", line 57, in load\n"
      "CheckpointException: ranks:dict_keys([2])\n"
      "Traceback (most recent call last): (RANK 2)\n"
      "  File \"/usr/lib/python3/pathlib.py\", line 1044, in open\n"
      "FileNotFoundError: [Errno 2] No such file: '__2_0.distcp'\n");
  e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->origin.rank, 2);
  EXPECT_EQ(e->exception, "FileNotFoundError");
}

TEST(StreamParser, SpawnedProcessTracebackBelongsToItsIndex) {
  auto events = parse(
      "  Traceback (most recent call last):\n"
      "    File \"/job/train.py\", line 48, in main\n"
      "  torch.multiprocessing.spawn.ProcessRaisedException: \n"
      "\n"
      "  -- Process 2 terminated with the following error:\n"
      "  Traceback (most recent call last):\n"
      "    File \"/job/models.py\", line 268, in forward\n"
      "  ValueError: Expected more than 1 value per channel when training\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].category, "launcher");
  EXPECT_EQ(events[1].origin.rank, 2);
  EXPECT_EQ(events[1].category, "batch_of_one");
  EXPECT_EQ(frame_key(events[1].user_frame()), "models.py:forward");
}

TEST(StreamParser, RichBoxedTraceback) {
  auto events = parse(
      "\xe2\x95\xad\xe2\x94\x80 Traceback (most recent call last) \xe2\x94\x80\xe2\x95\xae\n"
      "\xe2\x94\x82 /job/train.py:990 in <module>              \xe2\x94\x82\n"
      "\xe2\x94\x82                                            \xe2\x94\x82\n"
      "\xe2\x94\x82 \xe2\x9d\xb1  990 \xe2\x94\x82 trainer.train(args)  \xe2\x94\x82\n"
      "\xe2\x94\x82                                            \xe2\x94\x82\n"
      "\xe2\x94\x82 /job/library/train_util.py:1103 in __getit \xe2\x94\x82\n"
      "\xe2\x94\x82 em__                                       \xe2\x94\x82\n"
      "\xe2\x95\xb0\xe2\x94\x80\xe2\x94\x80\xe2\x95\xaf\n"
      "FileNotFoundError: [Errno 2] No such file or directory: '00513.txt'\n");
  const Event* e = first_error(events);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "FileNotFoundError");
  EXPECT_EQ(frame_key(e->user_frame()), "train_util.py:__getitem__");
}

TEST(StreamParser, DumpsPickTheMainThread) {
  auto events = parse(
      "Timeout (0:30:00)!\n"
      "Thread 0x00007f2a1c5fe640 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/threading.py\", line 327 in wait\n"
      "  File \"/job/prefetch.py\", line 91 in _fill\n"
      "\n"
      "Thread 0x00007f2a9e1b4740 (most recent call first):\n"
      "  File \"/usr/lib/python3.11/queue.py\", line 180 in get\n"
      "  File \"/job/prefetch.py\", line 58 in __next__\n"
      "  File \"/job/train.py\", line 240 in <module>\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::Stack);
  EXPECT_EQ(frame_key(events[0].user_frame()), "prefetch.py:__next__");
  // py-spy names the main thread and prints "func (file:line)" with paths relative to sys.path.
  events = parse(
      "Process 31012: /opt/conda/bin/python -u train.py\n"
      "Python v3.8.13 (/opt/conda/bin/python3.8)\n"
      "\n"
      "Thread 31290 (idle): \"Thread-2\"\n"
      "    wait (threading.py:306)\n"
      "Thread 31012 (idle): \"MainThread\"\n"
      "    wait (threading.py:302)\n"
      "    get (queue.py:170)\n"
      "    __next__ (asr/data/iterators.py:648)\n"
      "    <module> (asr_cli/train.py:522)\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].origin.pid, 31012);
  EXPECT_EQ(events[0].thread, "MainThread");
  EXPECT_EQ(frame_key(events[0].user_frame()), "iterators.py:__next__");
}

TEST(StreamParser, AbortsAndHandledErrors) {
  auto events = parse(
      "terminate called after throwing an instance of 'gloo::EnforceNotMet'\n"
      "  what():  [enforce fail at pair.cc:456] op.preamble.length <= op.nbytes. 120 vs 100\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].exception, "gloo::EnforceNotMet");
  EXPECT_EQ(events[0].category, "collective_mismatch");
  // A traceback Python's unraisable hook printed: the program went on.
  events = parse(
      "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__>\n"
      "Traceback (most recent call last):\n"
      "  File \"/usr/lib/python3.10/multiprocessing/process.py\", line 160, in is_alive\n"
      "AssertionError: can only test a child process\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].handled);
  // The C++ runtime's teardown abort is evidence, not a cause.
  events = parse("terminate called without an active exception\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_TRUE(events[0].weak);
}

TEST(StreamParser, ExceptionLinesAndGarbledLines) {
  std::string type, message;
  EXPECT_TRUE(parse_exception_line("mylib.errors.ShardCorrupt: shard 17", type, message));
  EXPECT_EQ(type, "mylib.errors.ShardCorrupt");
  EXPECT_TRUE(parse_exception_line("KeyboardInterrupt", type, message));
  EXPECT_TRUE(
      parse_exception_line("socket.gaierror: [Errno -2] Name or service not known", type, message));
  EXPECT_EQ(type, "socket.gaierror");
  EXPECT_FALSE(parse_exception_line("loader.iter: 3 of 10", type, message));
  EXPECT_FALSE(parse_exception_line("Epoch: 3/10", type, message));
  EXPECT_FALSE(parse_exception_line("Killed", type, message));
  EXPECT_FALSE(parse_exception_line("INFO: starting", type, message));
  EXPECT_TRUE(garbled("memory allocation of memory allocation of 20971522097152 bytes failed"));
  EXPECT_FALSE(garbled("memory allocation of 2097152 bytes failed"));
}

// Issue #19 (fuzz): Gloo's enforce glued mid-line to a [rankN] warning matched a category rule
// but not the quick filter, so the log reader skipped it. The filter holds every rule.
TEST(StreamParser, TheQuickFilterPassesEveryLineACategoryRuleAccepts) {
  const std::string glued =
      "[rank2]:[W815 21:03:34.302177004 ProcessGroupNCCL.cpp:1250] Warning: WARNING: process "
      "group has NOT been destroyed before we destruct ProcessGroupNCCL. member of[enforce fail "
      "at ../third_party/gloo/gloo/transport/tcp/pair.cc:446] op.preamble.length <= op.nbytes. 8 "
      "vs 4";
  ASSERT_EQ(classify_line(glued), "collective_mismatch");
  EXPECT_TRUE(could_matter(glued));
  EXPECT_FALSE(could_matter("step 3 ok, loss 0.25"));
}

TEST(StreamParser, ABareAssertionErrorTakesItsSourceLineAsItsMessage) {
  auto e = first_error_of(
      "Traceback (most recent call last):\n"
      "  File \"/job/data.py\", line 42, in __init__\n"
      "    assert num_samples > 0\n"
      "           ^^^^^^^^^^^^^^^\n"
      "AssertionError\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exception, "AssertionError");
  EXPECT_EQ(e->message, "assert num_samples > 0");
  // An assertion with its own message keeps it; another bare exception gets no source line.
  e = first_error_of(
      "Traceback (most recent call last):\n"
      "  File \"/job/data.py\", line 42, in __init__\n"
      "    assert n > 0, \"empty split\"\n"
      "AssertionError: empty split\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "empty split");
  e = first_error_of(
      "Traceback (most recent call last):\n"
      "  File \"/job/data.py\", line 9, in load\n"
      "    raise StopIteration\n"
      "StopIteration\n");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->message, "");
}

TEST(Frames, AFrameworkRunFromItsOwnCheckoutIsStillALibrary) {
  EXPECT_TRUE(is_library_frame("/usr/lib/python3/dist-packages/accelerate/utils/operations.py"));
  // pip install -e: a src/ layout, or a checkout named after its package.
  EXPECT_TRUE(is_library_frame("/home/z/accelerate/src/accelerate/utils/operations.py"));
  EXPECT_TRUE(is_library_frame("/work/DeepSpeed/deepspeed/runtime/engine.py"));
  EXPECT_TRUE(is_library_frame("DeepSpeed/deepspeed/runtime/engine.py"));
  // The user's own code, even in folders with those names elsewhere in the path.
  EXPECT_FALSE(is_library_frame("/home/z/test.py"));
  EXPECT_FALSE(is_library_frame("/home/z/projects/accelerate/train.py"));
  EXPECT_FALSE(is_library_frame("/workspace/Megatron-LM/megatron/core/datasets/gpt_dataset.py"));
  EXPECT_FALSE(is_library_frame("/src/myproj/datasets_utils/load.py"));
}
