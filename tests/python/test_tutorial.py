"""The tutorial-style workloads (tests/zoo/tutorial) with the agent's variables set by hand as the
driver will: each planted bug shows at the minimum its spec's `# expect:` line names, and one step
(or the culprit sample) less passes. Each run gets a fresh copy of the workload's folder."""
import re
import shutil
import tempfile
import time
import unittest
from pathlib import Path

from agentlib import PY, ROOT, JobTest, agent_lines

ZOO = ROOT / "tests" / "zoo" / "tutorial"


class TutorialWorkloads(JobTest):
    def run_case(self, name, argv, world=1, folder=None, **env):
        if folder is None:
            folder = Path(tempfile.mkdtemp(prefix="tutorial-")) / name
            shutil.copytree(ZOO / name, folder)
            self.addCleanup(shutil.rmtree, folder.parent)
        job = self.job(argv, world=world, cwd=folder, DDPBISECT_SAMPLES_AUTO="1", **env)
        return job, folder

    def assertFailsWith(self, job, text):
        codes = job.wait(180)
        self.assertTrue(any(codes), job.tails())
        self.assertTrue(any(text in job.err(r) for r in range(job.world)), job.tails())

    def assertPasses(self, job):
        self.assertEqual(job.wait(180), [0] * job.world, job.tails())

    def test_snapshot_trainer(self):
        argv = [PY, "train.py", "4", "1", "--batch_size", "1"]
        job, _ = self.run_case("snapshot_trainer", argv, DDPBISECT_SAMPLES="301", DDPBISECT_MAX_STEPS="1")
        self.assertFailsWith(job, "IndexError: Target 10 is out of bounds")
        line = agent_lines(job.err(0), "DDPBISECT_DATASET")[0]
        self.assertEqual((line["len"], line["class"], line["via"]), (486, "MyTrainDataset", "DistributedSampler"))
        job, _ = self.run_case("snapshot_trainer", argv, world=2, DDPBISECT_SAMPLES="0-300,302-485",
                               DDPBISECT_MAX_STEPS="3")
        self.assertPasses(job)
        # Why trials need their own folder: a passing trial leaves snapshot.pt behind, and the
        # failing minimum then resumes past the end and passes. Without snapshots it cannot.
        for snapshots, expect_failure in ((["--snapshot_path", "snapshot.pt"], False),
                                          (["--snapshot_path", ""], True)):
            job, folder = self.run_case("snapshot_trainer", argv + snapshots, DDPBISECT_SAMPLES="0-9")
            self.assertPasses(job)
            job, _ = self.run_case("snapshot_trainer", argv + snapshots, folder=folder,
                                   DDPBISECT_SAMPLES="301", DDPBISECT_MAX_STEPS="1")
            if expect_failure:
                self.assertFailsWith(job, "IndexError")
            else:
                self.assertPasses(job)
                self.assertIn("Resuming training from snapshot at Epoch 4", job.out(0))

    def test_sampler_loop(self):
        argv = [PY, "main.py", "--epochs", "20", "--batch-size", "1"]
        job, _ = self.run_case("sampler_loop", argv, world=2, DDPBISECT_SAMPLES="5", DDPBISECT_MAX_STEPS="2")
        for rank in range(2):
            job.wait_for(rank, '"step":0,', timeout=60)
        time.sleep(5)
        self.assertEqual([p.poll() for p in job.procs], [None, None], job.tails())
        for rank in range(2):  # no progress past the first step: a hang
            self.assertEqual([b["step"] for b in agent_lines(job.out(rank), "DDPBISECT_HEARTBEAT")], [0])
            job.request_stacks(rank)
            job.wait_for(rank, "DDPBISECT_COLLECTIVES", timeout=10)
        last = [agent_lines(job.err(r), "DDPBISECT_COLLECTIVES")[-1]["events"][-1] for r in range(2)]
        # rank 1 waits in DDP: the bucket rebuild of the 2nd forward (torch 2) or its backward
        self.assertEqual([e["state"] for e in last], ["issued", "issued"])
        self.assertEqual(last[0]["op"], "barrier")
        self.assertIn(last[1]["op"], ("ddp.forward", "ddp.backward"))
        self.assertEqual(last[0]["seq"], last[1]["seq"])
        self.assertRegex(last[0]["site"], r"^main\.py:\d+$")
        job.kill()
        job, _ = self.run_case("sampler_loop", argv, world=2, DDPBISECT_SAMPLES="5", DDPBISECT_MAX_STEPS="1")
        self.assertPasses(job)
        job, _ = self.run_case("sampler_loop", argv, world=1, DDPBISECT_SAMPLES="5", DDPBISECT_MAX_STEPS="4")
        self.assertPasses(job)

    def test_mingpt_trainer(self):
        def argv(eval_every):
            return [PY, "main.py", "trainer_config.batch_size=1", "trainer_config.eval_every=%d" % eval_every,
                    "trainer_config.max_epochs=50"]

        job, _ = self.run_case("mingpt_trainer", argv(1), DDPBISECT_SAMPLES="0", DDPBISECT_MAX_STEPS="2")
        self.assertFailsWith(job, "ValueError: not enough values to unpack (expected 3, got 2)")
        (line,) = agent_lines(job.err(0), "DDPBISECT_DATASET")
        self.assertEqual((line["class"], line["base"]["class"]), ("Subset", "CharDataset"))
        self.assertEqual(line["len"], int(line["base"]["len"] * 0.9))  # the train split, not the test one
        job, _ = self.run_case("mingpt_trainer", argv(1), DDPBISECT_SAMPLES="0", DDPBISECT_MAX_STEPS="1")
        self.assertPasses(job)
        job, _ = self.run_case("mingpt_trainer", argv(0), DDPBISECT_SAMPLES="0", DDPBISECT_MAX_STEPS="3")
        self.assertPasses(job)

    def test_wrapper_aux(self):
        argv = ["bash", "run.sh", "--epochs", "5", "--batch-size", "1"]
        job, _ = self.run_case("wrapper_aux", argv, DDPBISECT_SAMPLES="0", DDPBISECT_MAX_STEPS="2")
        self.assertFailsWith(job, "Expected to have finished reduction in the prior iteration")
        self.assertIn("[run.sh] rank 0/1", job.out(0))
        job, _ = self.run_case("wrapper_aux", argv, DDPBISECT_SAMPLES="0", DDPBISECT_MAX_STEPS="1")
        self.assertPasses(job)


if __name__ == "__main__":
    unittest.main()
