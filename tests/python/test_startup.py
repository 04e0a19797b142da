"""Loading: sitecustomize chains whatever it hides, does nothing else without DDPBISECT_AGENT=1,
never imports torch itself, and patches torch only once the program imports it."""
import os
import re
import tempfile
import unittest
from pathlib import Path

from agentlib import AGENT, STACK_SIGNAL, agent_env, run_python

PROBE = ("import sys; s = sys.modules.get('sitecustomize'); "
         "print('AGENT', 'ddpbisect_agent' in sys.modules); "
         "print('TORCH', any(m == 'torch' or m.startswith('torch.') for m in sys.modules)); "
         "print('SITE', getattr(s, '__file__', None)); "
         "print('SIGCGT', [l.split()[1] for l in open('/proc/self/status') if l.startswith('SigCgt')][0])")


def probe(env, args=()):
    out = run_python(PROBE, env, args=args)
    assert out.returncode == 0, out.stderr
    values = dict(line.split(" ", 1) for line in out.stdout.splitlines())
    mask = int(values["SIGCGT"], 16)
    return {"agent": values["AGENT"] == "True", "torch": values["TORCH"] == "True",
            "site": values["SITE"], "stack": bool(mask & (1 << (int(STACK_SIGNAL) - 1))),
            "stderr": out.stderr}


class Startup(unittest.TestCase):
    def setUp(self):
        self.user = Path(tempfile.mkdtemp(prefix="agent-site-"))

    def tearDown(self):
        for p in self.user.iterdir():
            p.unlink()
        self.user.rmdir()

    def user_site(self, body="import builtins\nbuiltins.USER_SITE_RAN = True\n"):
        (self.user / "sitecustomize.py").write_text(body)

    def test_off_by_default_and_everything_chained(self):
        baseline = probe(agent_env(agent=False))
        off = probe(dict(agent_env(agent=False), PYTHONPATH=str(AGENT)))
        self.assertFalse(off["agent"])
        self.assertFalse(off["stack"])
        # the interpreter's own sitecustomize (Debian's) still runs; with none, ours stays
        ours = str(AGENT / "sitecustomize.py")
        expected = ours if baseline["site"] == "None" else baseline["site"]
        self.assertEqual(off["site"], expected)
        on = probe(agent_env())
        self.assertTrue(on["agent"])
        self.assertTrue(on["stack"])
        self.assertFalse(on["torch"], "the agent must not import torch")
        self.assertEqual(on["site"], expected)
        self.assertEqual(on["stderr"], "")

    def test_user_sitecustomize_is_chained(self):
        self.user_site()
        for agent in (True, False):
            env = agent_env(agent, pythonpath=[self.user]) if agent else dict(
                agent_env(False), PYTHONPATH=os.pathsep.join([str(AGENT), str(self.user)]))
            out = run_python("import builtins, sys; print(getattr(builtins, 'USER_SITE_RAN', False),"
                             " sys.modules['sitecustomize'].__file__, 'ddpbisect_agent' in sys.modules)",
                             env)
            ran, path, loaded = out.stdout.split()
            self.assertEqual(ran, "True", out.stderr)
            self.assertEqual(Path(path), self.user / "sitecustomize.py")
            self.assertEqual(loaded, str(agent))

    def test_a_failing_user_sitecustomize_fails_as_without_ddpbisect(self):
        self.user_site("raise ValueError('broken site')\n")
        plain = run_python("print('ran')", dict(agent_env(False), PYTHONPATH=str(self.user)))
        ours = run_python("print('ran')", agent_env(pythonpath=[self.user]))
        self.assertEqual(ours.stdout, plain.stdout)
        self.assertIn("Error in sitecustomize", plain.stderr)
        self.assertEqual(ours.stderr, plain.stderr)

    def test_a_signal_faulthandler_keeps_is_refused_and_left_alone(self):
        out = run_python("import signal; print(signal.getsignal(signal.SIGABRT))",
                         agent_env(DDPBISECT_STACK_SIGNAL="6"))
        self.assertEqual(out.stdout.strip(), "None")  # still faulthandler's, not the agent's
        self.assertIn("cannot answer stack requests on signal 6", out.stderr)

    def test_isolated_mode_has_no_agent(self):
        self.assertFalse(probe(agent_env(), args=["-I"])["agent"])

    def test_import_cost_is_a_few_builtin_modules(self):
        def imported(env):
            out = run_python("pass", env, args=["-X", "importtime"])
            return {m.group(1) for m in re.finditer(r"\|\s+(\S+)\s*$", out.stderr, re.M)}, out.stderr

        without, _ = imported(agent_env(False))
        with_agent, text = imported(agent_env())
        added = with_agent - without
        self.assertLessEqual(added, {"ddpbisect_agent", "faulthandler", "atexit", "_signal"}, added)
        us = re.search(r"import time:\s+\d+ \|\s+(\d+) \|\s+ddpbisect_agent\b", text)
        print("[agent import: %s us] " % us.group(1), end="", flush=True)

    def test_torch_is_patched_once_imported(self):
        code = ("import torch.distributed as d; from torch.distributed import all_reduce; "
                "import torch.utils.data as u; "
                "print(hasattr(d.all_reduce, '_ddpbisect_original'), "
                "hasattr(all_reduce, '_ddpbisect_original'), "
                "u.DistributedSampler.__init__.__module__)")
        self.assertEqual(run_python(code, agent_env()).stdout.split(),
                         ["True", "True", "ddpbisect_agent.data"])
        self.assertEqual(run_python(code, agent_env(False)).stdout.split(),
                         ["False", "False", "torch.utils.data.distributed"])


if __name__ == "__main__":
    unittest.main()
