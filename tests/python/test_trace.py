"""The collective trace: what it records, across ranks, in the file, and on failure."""
import unittest

from agentlib import PY, JobTest, agent_lines, marked_lines, trace_files


class CollectiveTrace(JobTest):
    def test_every_call_kind_on_both_ranks(self):
        job = self.job([PY, "collectives.py"])
        self.assertEqual(job.wait(), [1, 1])
        lines = marked_lines("collectives.py")
        dumps = {}
        for rank in range(2):
            err = job.err(rank)
            found = agent_lines(err, "DDPBISECT_COLLECTIVES")
            self.assertEqual(len(found), 1, err[-2000:])
            dumps[rank] = found[0]
            # The dump comes before Python's traceback, which stays the last thing printed.
            self.assertLess(err.index("DDPBISECT_COLLECTIVES"), err.index("Traceback"))
            d = found[0]
            self.assertEqual((d["rank"], d["reason"], d["dropped"]), (rank, "exception", 0))
            ops = [e["op"] for e in d["events"]]
            p2p = "send" if rank == 0 else "recv"
            self.assertEqual(ops, ["init_process_group", "all_reduce", "broadcast", "barrier",
                                   "all_gather_object", "all_gather", p2p, "all_reduce",
                                   "new_group", "all_reduce"])  # nothing nested in the object call
            by_op = {}
            for e in d["events"]:
                self.assertEqual(e["state"], "completed", e)
                by_op.setdefault(e["op"], []).append(e)
            self.assertEqual(by_op["all_reduce"][0]["shapes"], [[2, 3]])
            self.assertEqual(by_op["all_reduce"][0]["dtypes"], ["float32"])
            self.assertEqual(by_op["all_reduce"][1]["dtypes"], ["float64"])
            self.assertEqual(by_op[p2p][0]["shapes"], [[5]])
            self.assertEqual(by_op[p2p][0]["peer"], 1 - rank)
            self.assertEqual(by_op["broadcast"][0]["peer"], 0)
            for e, mark in zip(d["events"], ["init", "all_reduce", "broadcast", "barrier",
                                             "all_gather_object", "all_gather", p2p, "async",
                                             "new_group", "subgroup"]):
                self.assertEqual(e["site"], "collectives.py:%d" % lines[mark], e)
            self.assertEqual(by_op[p2p][0]["fn"], "exchange")
            # the sub-group is group 1; its calls count on their own
            self.assertEqual([g["id"] for g in d["groups"]], [0, 1])
            self.assertEqual(by_op["all_reduce"][2]["pg"], 1)
            self.assertEqual(by_op["all_reduce"][2]["seq"], 0)
            seqs = [e["seq"] for e in d["events"] if e["pg"] == 0 and "seq" in e and e["op"] not in ("send", "recv")]
            self.assertEqual(seqs, sorted(seqs))
        # Both ranks number the same collective the same way: that is what matches them up.
        for a, b in zip(dumps[0]["events"], dumps[1]["events"]):
            if a["op"] not in ("send", "recv"):
                self.assertEqual((a["op"], a.get("seq"), a["pg"]), (b["op"], b.get("seq"), b["pg"]))
        # The file holds the same events.
        files = trace_files(job)
        self.assertEqual(sorted(files), [0, 1])
        for rank, (header, events) in files.items():
            self.assertEqual(header["state"], "exited")
            self.assertEqual([e["i"] for e in events], [e["i"] for e in dumps[rank]["events"]])
            self.assertEqual([e["op"] for e in events], [e["op"] for e in dumps[rank]["events"]])

    def test_ddp_marks_count_the_reducers_collectives(self):
        job = self.job([PY, "train_loop.py", "--epochs", "1", "--samples", "16"])
        self.assertEqual(job.wait(), [0, 0])
        files = trace_files(job)
        for rank in range(2):
            header, events = files[rank]
            ops = [e["op"] for e in events]
            self.assertEqual(ops[:2], ["init_process_group", "ddp.init"], ops)
            self.assertEqual(ops.count("ddp.forward"), 2)
            self.assertEqual(ops.count("ddp.backward"), 2)
            for e in events:
                if e["op"] == "ddp.backward":
                    # DDP's bucket all-reduce ran inside backward: the group's count moved
                    self.assertGreater(e["seq_end"], e["seq"], e)
                    self.assertRegex(e["site"], r"^train_loop\.py:\d+$")
            self.assertEqual(ops[-1], "barrier")
        self.assertEqual([e.get("seq") for e in files[0][1]], [e.get("seq") for e in files[1][1]])

    def test_exit_status_without_traceback_leaves_the_file(self):
        job = self.job([PY, "exitcode.py"])
        self.assertEqual(job.wait(), [3, 3])
        for rank, (header, events) in trace_files(job).items():
            self.assertEqual(header["state"], "exited")
            self.assertEqual([e["op"] for e in events], ["init_process_group", "all_reduce"])
            self.assertNotIn("DDPBISECT_COLLECTIVES", job.err(rank))

    def test_rank0_only_barrier_hang_is_attributed(self):
        job = self.job([PY, "rank0_barrier.py"])
        for rank in range(2):
            job.wait_for(rank, '"step":1,')  # both finished epoch 0's steps; rank 0 then hangs
        lines = marked_lines("rank0_barrier.py")
        import time
        time.sleep(1.0)
        last = {}
        for rank in range(2):
            job.request_stacks(rank)
            job.wait_for(rank, "DDPBISECT_COLLECTIVES", timeout=10)
            dump = agent_lines(job.err(rank), "DDPBISECT_COLLECTIVES")[-1]
            self.assertEqual(dump["reason"], "stack_request")
            last[rank] = dump["events"][-1]
            self.assertEqual(last[rank]["state"], "issued", last[rank])
        self.assertEqual(last[0]["op"], "barrier")
        self.assertEqual(last[0]["site"], "rank0_barrier.py:%d" % lines["barrier"])
        self.assertEqual(last[0]["fn"], "save_checkpoint")
        self.assertEqual(last[1]["op"], "ddp.backward")
        self.assertEqual(last[1]["site"], "rank0_barrier.py:%d" % lines["backward"])
        # Same position in the group's sequence, different calls: the mismatch the diagnosis names.
        self.assertEqual(last[0]["seq"], last[1]["seq"])
        # The stacks name the same lines.
        self.assertIn('rank0_barrier.py", line %d in save_checkpoint' % lines["barrier"], job.err(0))
        self.assertIn('rank0_barrier.py", line %d in main' % lines["backward"], job.err(1))


if __name__ == "__main__":
    unittest.main()
