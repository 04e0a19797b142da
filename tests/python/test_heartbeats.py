"""Heartbeats on every optimizer step (docs/heartbeat.md), with the rank's collective count."""
import json
import tempfile
import unittest
from pathlib import Path

from agentlib import HELPER, PY, JobTest, agent_env, agent_lines, trace_files


class Heartbeats(JobTest):
    def beats(self, job, rank):
        return agent_lines(job.out(rank), "DDPBISECT_HEARTBEAT")

    def test_every_step_with_the_collective_count(self):
        job = self.job([PY, "train_loop.py", "--samples", "16", "--epochs", "2"])
        self.assertEqual(job.wait(), [0, 0])
        seqs = []
        for rank in range(2):
            beats = self.beats(job, rank)
            self.assertEqual([b["step"] for b in beats], [0, 1, 2, 3])
            self.assertTrue(all(b["rank"] == rank and b["by"] == "agent" for b in beats))
            self.assertTrue(all(isinstance(b["loss"], float) for b in beats))
            self.assertEqual([b["t"] for b in beats], sorted(b["t"] for b in beats))
            seq = [b["seq"] for b in beats]
            self.assertEqual(seq, sorted(set(seq)), "seq must grow with every step")
            seqs.append(seq)
            # the count is the group's: the last traced backward ended where the last beat says
            events = trace_files(job)[rank][1]
            last_backward = [e for e in events if e["op"] == "ddp.backward"][-1]
            self.assertEqual(last_backward["seq_end"], seq[-1])
        self.assertEqual(seqs[0], seqs[1])

    def test_fast_steps_are_thinned_but_the_last_one_shows(self):
        job = self.job([PY, "train_loop.py", "--samples", "400", "--epochs", "1"])
        self.assertEqual(job.wait(), [0, 0])
        for rank in range(2):
            steps = [b["step"] for b in self.beats(job, rank)]
            self.assertEqual(steps[:3], [0, 1, 2])
            self.assertEqual(steps[-1], 49, "the newest step is printed at exit")
            self.assertEqual(steps, sorted(set(steps)))
            self.assertLessEqual(len(steps), 50)

    def test_a_step_is_an_optimizer_step(self):
        job = self.job([PY, "train_loop.py", "--samples", "16", "--epochs", "1", "--optimizers", "2"])
        self.assertEqual(job.wait(), [0, 0])
        self.assertEqual([b["step"] for b in self.beats(job, 0)], [0, 1, 2, 3])

    def test_without_a_process_group(self):
        job = self.job([PY, "train_loop.py", "--samples", "8", "--epochs", "1", "--no-dist",
                        "--sampler", "loader"], world=1)
        self.assertEqual(job.wait(), [0])
        beats = self.beats(job, 0)
        self.assertEqual([(b["step"], b["seq"]) for b in beats], [(0, None), (1, None)])

    def test_the_helper_takes_over(self):
        config = Path(tempfile.mkdtemp(prefix="agent-config-")) / "config.json"
        config.write_text(json.dumps({"trial": {"params": {}}}))
        env = agent_env(pythonpath=[HELPER], DDPBISECT_CONFIG=config)
        job = self.job([PY, "train_loop.py", "--samples", "16", "--epochs", "2", "--helper-heartbeat"],
                       env=env)
        self.assertEqual(job.wait(), [0, 0])
        for rank in range(2):
            beats = self.beats(job, rank)
            ours = [b for b in beats if b.get("by") == "agent"]
            theirs = [b for b in beats if "by" not in b]
            self.assertLessEqual(len(ours), 1, "the agent stands down at the helper's first beat")
            self.assertEqual([b["step"] for b in theirs], [0, 1, 2, 3])
            self.assertEqual(len({b["seq"] for b in theirs}), 4, "the helper reports the agent's seq")
        config.unlink()
        config.parent.rmdir()

    def test_dataloader_workers_stay_quiet(self):
        for context in ("fork", "spawn"):
            with self.subTest(context):
                job = self.job([PY, "train_loop.py", "--samples", "32", "--epochs", "1",
                                "--workers", "2", "--context", context])
                self.assertEqual(job.wait(), [0, 0], job.tails())
                for rank in range(2):
                    self.assertEqual([b["step"] for b in self.beats(job, rank)], [0, 1, 2, 3])
                    self.assertEqual(job.log(rank).count("DDPBISECT_DATASET"), 1)
                    # the workers really ran: they fetched the samples
                    self.assertEqual(job.out(rank).count("BATCH"), 4)
                self.assertEqual(sorted(trace_files(job)), [0, 1])  # no trace from a worker
                self.assertNoLeftovers(job)


if __name__ == "__main__":
    unittest.main()
