"""The training data set: its length, reported as one DDPBISECT_DATASET line, and, for `samples: auto`,
the trial's part of it (docs/agent.md).

Candidates are the samplers the program iterates: every DistributedSampler, and the RandomSampler or
SequentialSampler a DataLoader makes for a map-style data set when given no sampler. The training
one is decided when a candidate is first iterated (or measured): the names at its construction site
(train_loader vs. val_loader, MyTrainDataset), then shuffling, choose among the candidates known by
then; a tie is reported, not guessed. Its sampler then yields only the trial's indices (indices into
that data set; shuffling, padding and sharding across ranks apply to the subset as they would to the
whole)."""
import linecache
import math
import os
import re
import sys

from . import ENV, frames, state
from .core import emit, internal_error, rank

_TRAIN = frozenset(("train", "training", "trn"))
_EVAL = frozenset(("val", "valid", "validation", "test", "testing", "eval", "evaluation", "dev",
                   "holdout", "heldout"))
HELPER = "the helper (python/ddpbisect.py: ddpbisect.samples()) or {samples} on the command line"


class Candidate:
    __slots__ = ("dataset", "shuffle", "via", "stack", "hint", "decided", "selection")


_candidates = []
_train = None
_problem = False  # an ambiguity or a missing data set was reported


def _selection():
    """DDPBISECT_SAMPLES as a list ('0-3,7' -> [0, 1, 2, 3, 7]); None when absent (= every sample)."""
    text = ENV.get("DDPBISECT_SAMPLES")
    if text is None:
        return None
    out = []
    for part in text.split(","):
        part = part.strip()
        if part:
            lo, sep, hi = part.partition("-")
            out.extend(range(int(lo), int(hi) + 1) if sep else [int(lo)])
    return out


_SELECTION = None  # parsed on first use


def _words(text):
    for word in re.findall(r"[A-Za-z]+", text.split("#", 1)[0]):
        for part in re.findall(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+", word):
            yield part.lower()


def _name_hint(stack, dataset):
    """+1 if the innermost construction line that says train or eval says train, -1 if eval, 0."""
    lines = [linecache.getline(f, n) for f, n in stack] + [type(dataset).__name__]
    for line in lines:
        words = set(_words(line))
        train, evaluation = bool(words & _TRAIN), bool(words & _EVAL)
        if train != evaluation:
            return 1 if train else -1
    return 0


def register(dataset, shuffle, via):
    try:
        return _register(dataset, shuffle, via)
    except Exception as e:
        internal_error("data.register", e)
        return None


def _register(dataset, shuffle, via):
    if state.role == "helper":
        return None
    try:
        len(dataset)
    except Exception:
        return None
    c = Candidate()
    c.dataset, c.shuffle, c.via = dataset, bool(shuffle), via
    c.stack = tuple((f, n) for f, n, _ in frames.user_stack(3, 4))
    c.hint = _name_hint(c.stack, dataset)
    c.decided, c.selection = False, None
    _candidates.append(c)
    return c


def _score(c):
    return 2 * c.hint + (1 if c.shuffle else 0)


def _same_role(a, b):
    return a.dataset is b.dataset or (a.stack and a.stack == b.stack)


def _describe(c):
    site = "%s:%d" % c.stack[0] if c.stack else "?"
    return "%s (%s, %d samples%s)" % (_class(c.dataset), site, len(c.dataset),
                                      ", shuffled" if c.shuffle else "")


def _class(dataset):
    return type(dataset).__name__


def _choose(c):
    """c if it is the training candidate, else None (reporting a tie)."""
    global _problem
    wanted = ENV.get("DDPBISECT_DATASET_SITE")  # a class name or file:line, when the spec names it
    if wanted:
        site = "%s:%d" % c.stack[0] if c.stack else ""
        return c if wanted in (_class(c.dataset), site) or (
            ":" in wanted and site.endswith("/" + wanted)) else None
    roles = []  # [[best score, members]] by role
    for x in _candidates:
        for role in roles:
            if _same_role(x, role[1][0]):
                role[0] = max(role[0], _score(x))
                role[1].append(x)
                break
        else:
            roles.append([_score(x), [x]])
    top = max(r[0] for r in roles)
    best = [r for r in roles if r[0] == top]
    mine = next(r for r in roles if c in r[1])
    if mine[0] < top or top < 0:
        return None
    if len(best) > 1:
        if state.samples_auto and not _problem:
            _problem = True
            names = "; ".join(_describe(r[1][0]) for r in best)
            emit("DDPBISECT_DATASET", {
                "rank": rank(), "error": "ambiguous",
                "candidates": [_info(r[1][0]) for r in best],
                "message": "samples: auto cannot tell which data set is the training one: %s. "
                           "Name it (train_loader, TrainDataset), or use %s" % (names, HELPER)})
        return None
    return c


def _info(c, selection=None):
    d = {"len": len(c.dataset), "class": _class(c.dataset),
         "site": "%s:%d" % c.stack[0] if c.stack else None, "via": c.via, "shuffle": c.shuffle}
    base = getattr(c.dataset, "dataset", None)
    if base is not None and hasattr(c.dataset, "indices"):  # a Subset
        try:
            d["base"] = {"class": _class(base), "len": len(base)}
        except Exception:
            pass
    return d


def decide(c):
    """The indices c's sampler must yield, or None for all of them."""
    if c.decided:
        return c.selection
    try:
        return _decide(c)
    except Exception as e:
        internal_error("data.decide", e)
        return None


def _decide(c):
    global _train, _SELECTION
    if c.decided:
        return c.selection
    c.decided = True
    if state.user_samples or state.role == "helper":
        return None
    if _train is None:
        if _choose(c) is not c:
            return None
        _train = c
        if state.samples_auto:
            _SELECTION = _selection()
        info = _info(c)
        info["rank"] = rank()
        info["selected"] = None if _SELECTION is None else len(_SELECTION)
        emit("DDPBISECT_DATASET", info)
        _check_range(_SELECTION, len(c.dataset), _describe(c))
    elif not _same_role(c, _train):
        return None
    if state.samples_auto:
        c.selection = _SELECTION
    return c.selection


def _check_range(selection, n, what):
    if selection and max(selection) >= n:
        emit("DDPBISECT_DATASET", {
            "rank": rank(), "error": "out_of_range", "len": n, "max_index": max(selection),
            "message": "the trial asks for sample %d but the training data set %s has %d "
                       "(indices 0-%d)" % (max(selection), what, n, n - 1)})
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(2)


def on_first_step():
    """samples: auto and nothing was restricted by the first optimizer step: say so once."""
    global _problem
    if _train is not None or state.user_samples or _problem:
        return
    _problem = True
    seen = "; ".join(_describe(c) for c in _candidates) or "none"
    emit("DDPBISECT_DATASET", {
        "rank": rank(), "error": "not_found", "candidates": [_info(c) for c in _candidates],
        "message": "samples: auto found no training data set before the first optimizer step "
                   "(a DistributedSampler, or a DataLoader over a map-style data set without its own "
                   "sampler; seen: %s); use %s" % (seen, HELPER)})


def report_helper(default, chosen):
    """The script takes its samples from the helper: report the length it gave as its default."""
    global _SELECTION
    try:
        n = len(default)
    except TypeError:
        n = None
    stack = frames.user_stack(3, 1)
    selection = _selection() if state.samples_auto else None
    emit("DDPBISECT_DATASET", {
        "rank": rank(), "len": n, "class": None, "via": "helper", "shuffle": None,
        "site": "%s:%d" % stack[0][:2] if stack else None,
        "selected": None if selection is None else len(selection)})
    if n is not None:
        _check_range(selection, n, "given to ddpbisect.samples()")


# ---------------------------------------------------------------- the samplers
def _dist_len(sampler, n):
    r = sampler.num_replicas
    if sampler.drop_last and n % r:
        return math.ceil((n - r) / r)
    return math.ceil(n / r)


def _restricted_order(torch, g, n_full, selection):
    """Positions in `selection`, in the order a shuffle of the whole data set (n_full samples, from
    generator g) puts them: the run's own order with the other samples left out. A sample then
    never comes later when others are removed, so a failure at step k stays within k steps on
    every subset that keeps its sample (the driver's reductions rely on it)."""
    where = {idx: i for i, idx in enumerate(selection)}
    return [where[idx] for idx in torch.randperm(n_full, generator=g).tolist() if idx in where]


def _dist_iter(sampler, selection):
    """DistributedSampler's own algorithm over the selection instead of range(len(dataset)); a
    shuffle keeps the whole data set's order (_restricted_order)."""
    n = len(selection)
    if sampler.shuffle:
        torch = sys.modules["torch"]
        g = torch.Generator()
        g.manual_seed(sampler.seed + sampler.epoch)
        order = _restricted_order(torch, g, len(sampler.dataset), selection)
    else:
        order = list(range(n))
    total = _dist_len(sampler, n) * sampler.num_replicas
    if not sampler.drop_last:
        pad = total - len(order)
        if pad > 0 and order:
            order += (order * math.ceil(pad / len(order)))[:pad]
    else:
        order = order[:total]
    return iter([selection[i] for i in order[sampler.rank:total:sampler.num_replicas]])


def _random_iter(sampler, selection):
    torch = sys.modules["torch"]
    g = sampler.generator
    if g is None:
        g = torch.Generator()
        g.manual_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
    order = _restricted_order(torch, g, len(sampler.data_source), selection)
    return iter([selection[i] for i in order])


def _patch_iteration(cls, restricted_iter, restricted_len):
    iterate, length = cls.__iter__, cls.__len__

    def __iter__(self):
        c = self.__dict__.get("_ddpbisect")
        if c is not None:
            selection = decide(c)
            if selection is not None:
                return restricted_iter(self, selection)
        return iterate(self)

    def __len__(self):
        c = self.__dict__.get("_ddpbisect")
        if c is not None:
            selection = decide(c)
            if selection is not None:
                return restricted_len(self, selection)
        return length(self)

    cls.__iter__, cls.__len__ = __iter__, __len__


def patch_samplers(module):
    _patch_iteration(module.RandomSampler, _random_iter, lambda s, sel: len(sel))
    _patch_iteration(module.SequentialSampler, lambda s, sel: iter(list(sel)), lambda s, sel: len(sel))


def patch_distributed_sampler(module):
    cls = module.DistributedSampler
    init = cls.__init__

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        c = register(self.dataset, self.shuffle, "DistributedSampler")
        if c is not None:
            self.__dict__["_ddpbisect"] = c

    cls.__init__ = __init__
    _patch_iteration(cls, _dist_iter, lambda s, sel: _dist_len(s, len(sel)))


def patch_dataloader(module):
    import inspect

    loader = module.DataLoader
    init = loader.__init__
    signature = inspect.signature(init)
    iterable = getattr(module, "IterableDataset", ())

    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        try:
            a = signature.bind(self, *args, **kwargs).arguments
        except Exception:
            return
        dataset = a.get("dataset")
        if a.get("sampler") is not None or a.get("batch_sampler") is not None or isinstance(
                dataset, iterable):
            return
        sampler = getattr(self, "sampler", None)
        if type(sampler).__name__ not in ("RandomSampler", "SequentialSampler"):
            return
        c = register(dataset, bool(a.get("shuffle")), "DataLoader")
        if c is not None:
            sampler.__dict__["_ddpbisect"] = c

    loader.__init__ = __init__
