"""steps: auto: every rank ends cleanly after DDPBISECT_MAX_STEPS optimizer steps, with no peer left
talking to a closed connection. AGENT_TEST_REPEAT repeats the multi-rank runs (default 3)."""
import os
import re
import subprocess
import unittest

from agentlib import PY, JobTest, agent_env, agent_lines

REPEAT = int(os.environ.get("AGENT_TEST_REPEAT", "3"))
ECHOES = re.compile(r"Traceback|Connection closed|Connection reset|Broken pipe|terminate called|Error")


class StepLimit(JobTest):
    def check_stopped(self, job, steps):
        for rank in range(job.world):
            out, err = job.out(rank), job.err(rank)
            # Heartbeats are thinned (test_heartbeats): the first three and the last always show.
            beats = [b["step"] for b in agent_lines(out, "DDPBISECT_HEARTBEAT")]
            self.assertEqual(beats[:3], list(range(min(3, steps))), job.tails())
            self.assertEqual(beats[-1:], [steps - 1], job.tails())
            self.assertEqual(beats, sorted(set(beats)), job.tails())
            self.assertEqual(agent_lines(err, "DDPBISECT_STOP"),
                             [{"rank": rank, "steps": steps, "reason": "max_steps"}])
            self.assertNotIn("DONE", out, "the rest of the script must not run")
            self.assertIsNone(ECHOES.search(out + err), job.tails())

    def test_ranks_end_together(self):
        for world in (2, 4):
            for attempt in range(REPEAT):
                for workers in (0, 2):
                    with self.subTest(world=world, attempt=attempt, workers=workers):
                        job = self.job([PY, "train_loop.py", "--epochs", "5", "--samples", "64",
                                        "--workers", str(workers)], world=world,
                                       DDPBISECT_MAX_STEPS="3")
                        self.assertEqual(job.wait(), [0] * world, job.tails())
                        self.check_stopped(job, 3)
                        self.assertNoLeftovers(job)
                        job.close()

    def test_a_script_shorter_than_the_limit_ends_by_itself(self):
        job = self.job([PY, "train_loop.py", "--epochs", "1", "--samples", "16"],
                       DDPBISECT_MAX_STEPS="100")
        self.assertEqual(job.wait(), [0, 0])
        for rank in range(2):
            self.assertIn("DONE rank=%d steps=2" % rank, job.out(rank))
            self.assertNotIn("DDPBISECT_STOP", job.err(rank))

    def test_without_a_process_group(self):
        job = self.job([PY, "train_loop.py", "--no-dist", "--sampler", "loader", "--epochs", "3"],
                       world=1, DDPBISECT_MAX_STEPS="5")
        self.assertEqual(job.wait(), [0])
        self.check_stopped(job, 5)

    def test_under_torchrun(self):
        # ddpbisect starts one torchrun per node; its agent process is Python too but no rank
        probe = subprocess.run([PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node",
                                "1", "-m", "json.tool", "--help"], capture_output=True, text=True,
                               env=agent_env(False), timeout=120)
        if probe.returncode != 0:  # Debian's 1.13 torchrun fails on Python 3.11 by itself
            self.skipTest("torchrun does not start here: " + probe.stderr.strip().splitlines()[-1])
        job = self.job([PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                        "train_loop.py", "--epochs", "5"], world=1, DDPBISECT_MAX_STEPS="2",
                       DDPBISECT_SAMPLES_AUTO="1", DDPBISECT_SAMPLES="0-7")
        self.assertEqual(job.wait(), [0], job.tails())
        log = job.log(0)
        stops = agent_lines(log, "DDPBISECT_STOP")
        self.assertEqual(sorted(s["rank"] for s in stops), [0, 1])
        beats = agent_lines(log, "DDPBISECT_HEARTBEAT")
        self.assertEqual(sorted((b["rank"], b["step"]) for b in beats), [(0, 0), (0, 1), (1, 0), (1, 1)])
        self.assertEqual(len(agent_lines(log, "DDPBISECT_DATASET")), 2)
        self.assertNotIn("Traceback", log)
        self.assertNoLeftovers(job)


if __name__ == "__main__":
    unittest.main()
