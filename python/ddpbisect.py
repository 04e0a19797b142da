"""Optional helper for training scripts reduced by ddpbisect (pure Python, no dependency).

    import ddpbisect
    samples = ddpbisect.samples(default=range(len(dataset)))   # the trial's data subset
    if "aux_head" in ddpbisect.components(default=["backbone", "aux_head"]): ...
    if ddpbisect.feature("amp"): ...
    steps = ddpbisect.param("steps", 100)
    ...
    ddpbisect.heartbeat(step, loss=loss.item())               # once per training step

Outside ddpbisect (no DDPBISECT_CONFIG) every call returns its default and heartbeat() prints
nothing, so the script runs unchanged under torchrun or python. Scripts that take placeholders on
their command line instead ({samples}, {components}, ...) do not need this module at all, nor do
most scripts once ddpbisect's in-process agent runs (docs/agent.md); when both run, samples() and
heartbeat() tell the agent, which then leaves the data and the heartbeats to the script.
"""
import json
import os
import sys
import time

__all__ = ["active", "config", "samples", "components", "features", "feature", "param",
           "heartbeat", "parse_indices"]

_config = None


def parse_indices(text):
    """'0-3,7' -> [0, 1, 2, 3, 7] (ddpbisect's sample-range syntax)."""
    out = []
    for part in str(text).split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return out


def config():
    """The trial configuration (the "trial" object of DDPBISECT_CONFIG), or {} outside ddpbisect."""
    global _config
    if _config is None:
        _config = {}
        path = os.environ.get("DDPBISECT_CONFIG")
        if path:
            with open(path) as f:
                _config = json.load(f).get("trial", {})
    return _config


def active():
    """True when this process is a rank of a ddpbisect trial."""
    return bool(config())


def _agent():
    """ddpbisect's in-process agent (docs/agent.md) when it runs in this process, else None."""
    return sys.modules.get("ddpbisect_agent")


def samples(default=()):
    c = config()
    chosen = parse_indices(c["samples"]) if "samples" in c else list(default)
    agent = _agent()
    if agent is not None:  # the script restricts its data itself; the agent reports len(default)
        agent.on_helper_samples(default, chosen if "samples" in c else None)
    return chosen


def components(default=()):
    c = config()
    return list(c["components"]) if "components" in c else list(default)


def features(default=()):
    c = config()
    return list(c["features"]) if "features" in c else list(default)


def feature(name, default=False):
    c = config()
    return name in c["features"] if "features" in c else default


def param(name, default=None):
    return config().get("params", {}).get(name, default)


def heartbeat(step, loss=None, seq=None, rank=None):
    """Reports one finished training step (docs/heartbeat.md); a no-op outside ddpbisect."""
    if not active():
        return
    agent = _agent()
    if agent is not None:  # the agent's own heartbeats stand down; it knows the collective count
        agent_seq = agent.on_helper_heartbeat()
        if seq is None:
            seq = agent_seq
    if rank is None:
        rank = int(os.environ.get("RANK", "0"))
    line = {"rank": rank, "step": int(step), "t": round(time.time(), 3)}
    if loss is not None:
        line["loss"] = float(loss) if loss == loss and abs(float(loss)) != float("inf") else None
    if seq is not None:
        line["seq"] = int(seq)
    sys.stdout.write("DDPBISECT_HEARTBEAT " + json.dumps(line, separators=(",", ":")) + "\n")
    sys.stdout.flush()
