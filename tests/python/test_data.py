"""samples: auto: the training data set's length, and only the trial's samples from it."""
import json
import re
import tempfile
import unittest
from pathlib import Path

from agentlib import HELPER, PY, WORKLOADS, JobTest, agent_env, agent_lines

AUTO = {"DDPBISECT_SAMPLES_AUTO": "1"}


def batches(job, rank):
    """Per epoch, the indices a rank's batches held (train_loop.py's BATCH lines)."""
    out = {}
    for m in re.finditer(r"BATCH rank=\d+ epoch=(\d+) step=\d+ idx=([\d,]+)", job.out(rank)):
        out.setdefault(int(m.group(1)), []).extend(int(i) for i in m.group(2).split(","))
    return out


def seen(job, rank):
    """{loader name: indices} from datasets.py's IDX lines."""
    return {m.group(1): [int(i) for i in m.group(2).split(",") if i]
            for m in re.finditer(r"IDX (\w+) rank=\d+: ([\d,]*)", job.out(rank))}


class SamplesAuto(JobTest):
    def dataset_lines(self, job, rank):
        return agent_lines(job.err(rank), "DDPBISECT_DATASET")

    def test_distributed_sampler_yields_the_trials_samples(self):
        for shuffle in (1, 0):
            with self.subTest(shuffle=shuffle):
                job = self.job([PY, "train_loop.py", "--shuffle", str(shuffle), "--epochs", "2"],
                               DDPBISECT_SAMPLES="3-5,17,40", **AUTO)
                self.assertEqual(job.wait(), [0, 0], job.tails())
                for epoch in (0, 1):
                    got = [batches(job, r)[epoch] for r in range(2)]
                    self.assertEqual([len(g) for g in got], [3, 3])  # 5 padded to 6, sharded
                    self.assertEqual(set(got[0]) | set(got[1]), {3, 4, 5, 17, 40})
                if not shuffle:  # DistributedSampler's own order over the subset
                    self.assertEqual(batches(job, 0)[0], [3, 5, 40])
                    self.assertEqual(batches(job, 1)[0], [4, 17, 3])
                for rank in range(2):
                    self.assertIn("LEN rank=%d batches=1" % rank, job.out(rank))
                    (line,) = self.dataset_lines(job, rank)
                    self.assertEqual({k: line[k] for k in ("rank", "len", "class", "via", "selected")},
                                     {"rank": rank, "len": 64, "class": "Numbers",
                                      "via": "DistributedSampler", "selected": 5})
                    self.assertRegex(line["site"], r"^train_loop\.py:\d+$")
                job.close()

    def test_dataloader_without_a_sampler(self):
        for shuffle in (1, 0):
            with self.subTest(shuffle=shuffle):
                job = self.job([PY, "train_loop.py", "--sampler", "loader", "--shuffle", str(shuffle),
                                "--epochs", "1"], DDPBISECT_SAMPLES="9,2,30-31", **AUTO)
                self.assertEqual(job.wait(), [0, 0], job.tails())
                for rank in range(2):  # no sharding: every rank reads the whole selection
                    got = batches(job, rank)[0]
                    self.assertEqual(sorted(got), [2, 9, 30, 31])
                    if not shuffle:
                        self.assertEqual(got, [9, 2, 30, 31])
                    self.assertEqual(self.dataset_lines(job, rank)[0]["via"], "DataLoader")
                job.close()

    def test_indices_of_a_subset_are_its_own(self):
        job = self.job([PY, "train_loop.py", "--subset", "10-39", "--epochs", "1"],
                       DDPBISECT_SAMPLES="0,29", **AUTO)
        self.assertEqual(job.wait(), [0, 0], job.tails())
        self.assertEqual(sorted(batches(job, 0)[0] + batches(job, 1)[0]), [10, 39])
        line = self.dataset_lines(job, 0)[0]
        self.assertEqual((line["len"], line["class"], line["base"]),
                         (30, "Subset", {"class": "Numbers", "len": 64}))

    def test_an_index_beyond_the_data_set_is_an_error(self):
        job = self.job([PY, "train_loop.py"], DDPBISECT_SAMPLES="0-64", **AUTO)
        self.assertEqual(job.wait(), [2, 2])
        for rank in range(2):
            lines = self.dataset_lines(job, rank)
            self.assertEqual(lines[-1]["error"], "out_of_range")
            self.assertEqual((lines[-1]["len"], lines[-1]["max_index"]), (64, 64))
            self.assertIn("sample 64", lines[-1]["message"])
            self.assertNotIn("BATCH", job.out(rank))
            self.assertNotIn("Traceback", job.err(rank))

    def test_reported_but_not_restricted_without_samples_auto(self):
        for env in ({"DDPBISECT_SAMPLES": "1-2"}, AUTO):  # explicit count; auto, measuring run
            with self.subTest(env=env):
                job = self.job([PY, "train_loop.py", "--epochs", "1"], **env)
                self.assertEqual(job.wait(), [0, 0])
                self.assertEqual(sorted(batches(job, 0)[0] + batches(job, 1)[0]), list(range(64)))
                line = self.dataset_lines(job, 0)[0]
                self.assertEqual((line["len"], line["selected"]), (64, None))
                job.close()

    def test_training_set_is_told_from_evaluation_sets(self):
        job = self.job([PY, "datasets.py", "trainval"], DDPBISECT_SAMPLES="1-3", **AUTO)
        self.assertEqual(job.wait(), [0, 0], job.tails())
        got = [seen(job, r) for r in range(2)]
        self.assertEqual(sorted(set(got[0]["train"]) | set(got[1]["train"])), [1, 2, 3])
        self.assertEqual(sorted(got[0]["val"] + got[1]["val"]), list(range(30)))
        self.assertEqual(len(self.dataset_lines(job, 0)), 1)

        job = self.job([PY, "datasets.py", "valfirst"], DDPBISECT_SAMPLES="7", **AUTO)
        self.assertEqual(job.wait(), [0, 0], job.tails())
        self.assertEqual(seen(job, 0), {"val": list(range(30)), "train": [7]})
        (line,) = self.dataset_lines(job, 0)
        self.assertEqual((line["len"], line["shuffle"]), (40, True))

    def test_undecidable_says_so_and_the_spec_can_name_it(self):
        job = self.job([PY, "datasets.py", "ambiguous"], DDPBISECT_SAMPLES="1", **AUTO)
        self.assertEqual(job.wait(), [0, 0])
        for rank in range(2):
            (line,) = self.dataset_lines(job, rank)
            self.assertEqual(line["error"], "ambiguous")
            self.assertEqual(sorted(c["len"] for c in line["candidates"]), [30, 40])
            self.assertIn("datasets.py:", line["message"])
            self.assertIn("ddpbisect.samples()", line["message"])
            self.assertEqual(seen(job, rank), {"a": list(range(40)), "b": list(range(30))})
        mark = next(n for n, l in enumerate((WORKLOADS / "datasets.py").read_text().splitlines(), 1)
                    if "# mark:b" in l)
        job = self.job([PY, "datasets.py", "ambiguous"], DDPBISECT_SAMPLES="1",
                       DDPBISECT_DATASET_SITE="datasets.py:%d" % mark, **AUTO)
        self.assertEqual(job.wait(), [0, 0])
        self.assertEqual(seen(job, 0), {"a": list(range(40)), "b": [1]})

    def test_no_map_style_data_set_is_reported_at_the_first_step(self):
        job = self.job([PY, "datasets.py", "iterable"], DDPBISECT_SAMPLES="1", **AUTO)
        self.assertEqual(job.wait(), [0, 0])
        for rank in range(2):
            (line,) = self.dataset_lines(job, rank)
            self.assertEqual(line["error"], "not_found")
            self.assertIn("ddpbisect.samples()", line["message"])

    def test_dataloader_workers_fetch_only_the_trials_samples(self):
        for context in ("fork", "spawn"):
            with self.subTest(context):
                job = self.job([PY, "train_loop.py", "--workers", "2", "--context", context,
                                "--epochs", "2"], DDPBISECT_SAMPLES="0-9", **AUTO)
                self.assertEqual(job.wait(), [0, 0], job.tails())
                for epoch in (0, 1):  # the indices come back from the workers' __getitem__
                    self.assertEqual(sorted(batches(job, 0)[epoch] + batches(job, 1)[epoch]),
                                     list(range(10)))
                self.assertEqual(len(self.dataset_lines(job, 0)), 1)
                self.assertNoLeftovers(job)
                job.close()

    def test_the_helper_restricts_and_the_agent_reports_its_default(self):
        config = Path(tempfile.mkdtemp(prefix="agent-config-")) / "config.json"
        config.write_text(json.dumps({"trial": {"samples": "0-3"}}))
        env = dict(agent_env(pythonpath=[HELPER]), DDPBISECT_CONFIG=str(config),
                   DDPBISECT_SAMPLES="0-3", **AUTO)
        job = self.job([PY, "train_loop.py", "--helper-samples", "--epochs", "1"], env=env)
        self.assertEqual(job.wait(), [0, 0], job.tails())
        self.assertEqual(sorted(batches(job, 0)[0] + batches(job, 1)[0]), [0, 1, 2, 3])
        (line,) = self.dataset_lines(job, 0)
        self.assertEqual((line["via"], line["len"], line["selected"]), ("helper", 64, 4))
        config.unlink()
        config.parent.rmdir()


if __name__ == "__main__":
    unittest.main()
