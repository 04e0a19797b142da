"""Starts ddpbisect's in-process agent in every Python process of a rank (docs/agent.md).

ddpbisect puts this folder first on PYTHONPATH for the ranks of a command workload, so `site` imports
this file at startup instead of any other sitecustomize. That other one (the next on sys.path: a
distribution's, a virtual environment's, the user's) then runs under its own name, so nothing the user
had is lost. Without DDPBISECT_AGENT=1 this file does only that."""
import os
import sys


def _start_agent():
    try:
        import ddpbisect_agent

        ddpbisect_agent.start()
    except Exception as e:  # the agent must never break the program it watches
        try:
            os.write(2, ("ddpbisect agent: not started: %s: %s\n" % (type(e).__name__, e)).encode())
        except OSError:
            pass


def _chain():
    here = os.path.dirname(os.path.abspath(__file__))
    rest = []
    for entry in sys.path:
        try:
            if os.path.samefile(entry or os.curdir, here):
                continue
        except OSError:
            pass
        rest.append(entry)
    # The interpreter's own import machinery, already loaded: importing importlib.util would cost
    # milliseconds in every Python process.
    bootstrap = sys.modules.get("_frozen_importlib")
    external = sys.modules.get("_frozen_importlib_external")
    if bootstrap is None or external is None:
        import importlib.machinery as external
        import importlib.util as bootstrap
    spec = external.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = bootstrap.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)  # its errors reach `site` exactly as without ddpbisect
    except BaseException:
        del sys.modules["sitecustomize"]
        raise


if os.environ.get("DDPBISECT_AGENT") == "1":
    _start_agent()
_chain()
