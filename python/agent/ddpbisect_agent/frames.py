"""The user's call site: the innermost frame outside torch, the standard library, installed packages
and this agent (the same idea as the diagnosis's innermost user frame, docs/categories.md)."""
import json
import os
import sys

_AGENT = os.path.dirname(os.path.abspath(__file__)) + os.sep
_STDLIB = os.path.dirname(os.path.abspath(os.__file__)) + os.sep
_names = {}  # co_filename -> display name JSON-escaped (no quotes), or None for library code


def _display(filename):
    if filename.startswith("<"):
        return filename if filename in ("<string>", "<stdin>") or filename.startswith("<ipython") else None
    path = os.path.abspath(filename)
    if path.startswith((_AGENT, _STDLIB)) or "/site-packages/" in path or "/dist-packages/" in path:
        return None
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file and path.startswith(os.path.dirname(torch_file) + os.sep):
        return None
    try:
        rel = os.path.relpath(path)
        if not rel.startswith(".."):
            return rel
    except ValueError:
        pass
    return path


def escaped(filename):
    """The display name of a code file, escaped for a JSON string; None for library code."""
    try:
        return _names[filename]
    except KeyError:
        name = _display(filename)
        e = _names[filename] = None if name is None else json.dumps(name)[1:-1]
        return e


_sites = {}  # (code, last instruction) of a user frame -> its (file, line, function), shared


def user_frame(depth=2):
    """(escaped file, line, function) of the innermost user frame above the caller, or None. The
    tuple is shared by every call from the same place: a frame's line number costs a scan of its
    function's line table, and a new tuple each call is one more object for the collector."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    names = _names
    while f is not None:
        code = f.f_code
        e = names.get(code.co_filename, _MISSING)
        if e is _MISSING:
            e = escaped(code.co_filename)
        if e is not None:
            key = (code, f.f_lasti)
            site = _sites.get(key)
            if site is None:
                site = (e, f.f_lineno, code.co_name)
                if len(_sites) < 4096:
                    _sites[key] = site
            return site
        f = f.f_back
    return None


_MISSING = object()


def user_stack(depth=2, limit=4):
    """Up to `limit` user frames, innermost first: [(file, line, function)], plain strings."""
    out = []
    try:
        f = sys._getframe(depth)
    except ValueError:
        return out
    while f is not None and len(out) < limit:
        code = f.f_code
        e = escaped(code.co_filename)
        if e is not None:
            out.append((json.loads('"%s"' % e), f.f_lineno, code.co_name))
        f = f.f_back
    return out
