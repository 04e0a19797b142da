"""Stack requests: every thread's Python stack and the collective trace from a hung rank, behind
wrappers, with the GIL held, with DataLoader workers, and without disturbing a healthy run."""
import os
import sys
import time
import unittest

from agentlib import (PY, STACK_SIGNAL, JobTest, agent_lines, children, exe, signals_caught,
                      torch_version, trace_files)


def wait_line(job, rank, tag, count=1, timeout=10):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if job.err(rank).count(tag) >= count:
            return True
        time.sleep(0.005)
    return False


def wait_for_init(job, rank, timeout=90):
    """True once the rank's trace file shows init_process_group issued."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            events = trace_files(job).get(rank, (None, []))[1]
        except ValueError:  # a line half written
            events = []
        if any(e.get("op") == "init_process_group" for e in events):
            return True
        time.sleep(0.05)
    return False


class StackRequests(JobTest):
    def hung_job(self, argv=None, **kwargs):
        job = self.job(argv or [PY, "hang_allreduce.py"], **kwargs)
        for rank in range(2):
            job.wait_for(rank, "READY")
        time.sleep(0.5)  # rank 0 is now inside its second all_reduce
        return job

    def test_hung_rank_answers_with_every_thread_and_the_trace(self):
        job = self.hung_job()
        for rank in range(2):
            pid = job.procs[rank].pid
            self.assertIn(int(STACK_SIGNAL), signals_caught(pid))
            sent = time.time()
            os.kill(pid, STACK_SIGNAL)
            self.assertTrue(wait_line(job, rank, "DDPBISECT_COLLECTIVES"), job.tails())
            latency = time.time() - sent
            sys.stderr.write("[stack request latency, rank %d hung: %.1f ms] " % (rank, latency * 1e3))
            self.assertLess(latency, 5.0)
            err = job.err(rank)
            self.assertIn("Current thread 0x", err)
            self.assertIn("in report_progress", err)  # the other Python thread
            self.assertIsNone(job.procs[rank].poll(), "a stack request must not end the rank")
        err0 = job.err(0)
        self.assertRegex(err0, r'hang_allreduce\.py", line \d+ in wait_for_peer')
        dump = agent_lines(err0, "DDPBISECT_COLLECTIVES")[-1]
        last = dump["events"][-1]
        self.assertEqual((last["op"], last["state"], last["fn"]), ("all_reduce", "issued", "wait_for_peer"))
        self.assertEqual(last["shapes"], [[16, 4]])
        self.assertEqual(dump["groups"][0]["seq"], 2)  # the live count: two issued, one completed
        dump1 = agent_lines(job.err(1), "DDPBISECT_COLLECTIVES")[-1]
        self.assertEqual(dump1["events"][-1]["state"], "completed")
        self.assertEqual(dump1["groups"][0]["seq"], 1)

    def test_gil_held_rank_still_gives_stacks_and_a_current_file(self):
        job = self.hung_job([PY, "hang_allreduce.py", "--gil"])
        os.kill(job.procs[1].pid, STACK_SIGNAL)
        self.assertTrue(wait_line(job, 1, "Current thread 0x"), job.tails())
        self.assertFalse(wait_line(job, 1, "DDPBISECT_COLLECTIVES", timeout=1.5),
                         "no Python thread can run there; yet a trace line appeared")
        self.assertRegex(job.err(1), r'hang_allreduce\.py", line \d+ in main')
        files = trace_files(job)
        self.assertEqual([e["op"] for e in files[1][1]], ["init_process_group", "all_reduce"])
        self.assertEqual(files[0][1][-1]["state"], "issued")  # written before it blocked

    def test_behind_wrappers(self):
        cases = {
            "sh -c": ["sh", "-c", "python3 hang_allreduce.py; echo ended"],
            "env": ["env", "WRAPPED=1", "python3", "hang_allreduce.py"],
            "bash script": ["bash", "wrapper.sh", "hang_allreduce.py"],
        }
        for name, argv in cases.items():
            with self.subTest(name):
                job = self.hung_job(argv)
                for rank in range(2):
                    sent = job.request_stacks(rank)
                    # only Python processes catch the signal: never the shell
                    self.assertEqual(len(sent), 1, sent)
                    self.assertIn("python", os.path.basename(list(sent.values())[0]))
                    self.assertTrue(wait_line(job, rank, "DDPBISECT_COLLECTIVES"), job.tails())
                    self.assertIn("Current thread 0x", job.err(rank))
                    root = job.procs[rank].pid
                    if name != "env":  # env execs Python; the shells stay as parents
                        self.assertNotIn("python", exe(root))
                        self.assertNotIn(int(STACK_SIGNAL), signals_caught(root))
                    self.assertIsNone(job.procs[rank].poll())
                dump = agent_lines(job.err(0), "DDPBISECT_COLLECTIVES")[-1]
                self.assertEqual(dump["events"][-1]["op"], "all_reduce")
                self.assertEqual(dump["events"][-1]["state"], "issued")
                job.close()

    def test_dataloader_workers_dump_their_stack_but_no_trace(self):
        job = self.job([PY, "hang_with_workers.py"])
        for rank in range(2):
            job.wait_for(rank, "READY")
        time.sleep(0.5)
        sent = job.request_stacks(0)
        self.assertEqual(len(sent), 3, sent)  # the rank and its two workers
        self.assertTrue(wait_line(job, 0, "DDPBISECT_COLLECTIVES"))
        time.sleep(0.5)
        err = job.err(0)
        self.assertEqual(err.count("DDPBISECT_COLLECTIVES"), 1)
        self.assertEqual(err.count("Current thread 0x"), 1)
        # helpers dump only their own thread, in faulthandler's one-thread form
        self.assertEqual(err.count("Stack (most recent call first):"), 2)
        self.assertIn("_worker_loop", err)
        self.assertEqual(len(children(job.procs[0].pid)), 2, "the workers must survive")
        self.assertNotIn("DDPBISECT_HEARTBEAT", job.out(0))

    def test_rank_waiting_for_its_peer_in_init(self):
        for waiting in (0, 1):  # the store's host waits for a client, or a client for the host
            with self.subTest(waiting=waiting):
                job = self.job(lambda r: [PY, "train_loop.py"] if r == waiting else ["sleep", "60"])
                # an event, not a sleep: on a loaded machine the import of torch alone takes seconds
                self.assertTrue(wait_for_init(job, waiting), job.tails())
                time.sleep(0.5)  # past the trace write, into the store's constructor
                sent = job.request_stacks(waiting)
                self.assertEqual(len(sent), 1)
                self.assertTrue(wait_line(job, waiting, "Thread 0x"), job.tails())
                # torch 1.13 keeps the GIL in TCPStore's constructor: no Python thread can print
                # the trace then, but its file is current
                old_torch = torch_version()[0] == 1
                if wait_line(job, waiting, "DDPBISECT_COLLECTIVES", timeout=2 if old_torch else 20):
                    dump = agent_lines(job.err(waiting), "DDPBISECT_COLLECTIVES")[-1]
                    events = dump["events"]
                else:
                    self.assertTrue(old_torch, "torch 2 releases the GIL there: the dump must come")
                    events = trace_files(job)[waiting][1]
                self.assertEqual([(e["op"], e["state"]) for e in events],
                                 [("init_process_group", "issued")])
                time.sleep(1)
                err = job.err(waiting)
                self.assertRegex(err, r'train_loop\.py", line \d+ in main')
                self.assertNotIn("Interrupted system call", err)
                self.assertNotIn("Traceback", err)
                self.assertIsNone(job.procs[waiting].poll())
                job.close()

    def test_requests_do_not_disturb_a_healthy_run(self):
        job = self.job([PY, "train_loop.py", "--epochs", "1", "--samples", "1200", "--workers", "2"])
        job.wait_for(0, "BATCH")
        sent = 0
        while all(p.poll() is None for p in job.procs) and sent < 400:
            for p in job.procs:
                for pid in [p.pid] + children(p.pid):
                    if int(STACK_SIGNAL) in signals_caught(pid):
                        try:
                            os.kill(pid, STACK_SIGNAL)
                            sent += 1
                        except OSError:
                            pass
            time.sleep(0.03)
        self.assertEqual(job.wait(), [0, 0], job.tails())
        self.assertGreater(sent, 20)
        for rank in range(2):
            self.assertIn("DONE rank=%d steps=150" % rank, job.out(rank))
            self.assertNotIn("Traceback", job.err(rank))
        self.assertNoLeftovers(job)


if __name__ == "__main__":
    unittest.main()
