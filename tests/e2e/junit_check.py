"""A strict check of a JUnit XML file against the structure Jenkins' junit plugin (its
junit-10 schema) and GitLab's test-report parser read: testsuites > testsuite > testcase, each
testcase at most one of skipped / failure / error, then system-out / system-err; the attributes
each element may carry, their formats, the counts agreeing with the cases, and (what this
project promises) every <failure> with a type, a message and its text as body.
Usage: junit_check.py FILE.xml     (exit 1 with the problems listed)"""
import re
import sys
import xml.etree.ElementTree as ET

INT = re.compile(r"^\d+$")
TIME = re.compile(r"^\d+(\.\d+)?$")
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$")
SUITES_ATTRS = {"name", "tests", "failures", "errors", "skipped", "disabled", "time"}
SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "disabled", "time",
               "timestamp", "hostname", "id", "package", "file"}
CASE_ATTRS = {"name", "classname", "time", "assertions", "status", "file", "line"}
RESULT_ATTRS = {"message", "type"}


def check(path):
    problems = []
    p = problems.append
    raw = open(path, "rb").read()
    if not raw.startswith(b'<?xml version="1.0" encoding="UTF-8"?>'):
        p("no UTF-8 XML declaration")
    try:
        raw.decode("utf-8")
        root = ET.fromstring(raw)
    except (UnicodeDecodeError, ET.ParseError) as e:
        return [f"not well-formed XML: {e}"]

    def attrs(el, allowed, required=()):
        for a in el.attrib:
            if a not in allowed:
                p(f"<{el.tag}> has an attribute the schema does not know: {a}")
        for a in required:
            if a not in el.attrib:
                p(f"<{el.tag}> lacks the required attribute {a}")
        for a in ("tests", "failures", "errors", "skipped", "disabled", "assertions"):
            if a in el.attrib and not INT.match(el.get(a)):
                p(f"<{el.tag} {a}={el.get(a)!r}>: not a count")
        if "time" in el.attrib and not TIME.match(el.get("time")):
            p(f"<{el.tag} time={el.get('time')!r}>: not seconds")
        if "timestamp" in el.attrib and not TIMESTAMP.match(el.get("timestamp")):
            p(f"<{el.tag} timestamp={el.get('timestamp')!r}>: not ISO 8601 (YYYY-MM-DDThh:mm:ss)")

    if root.tag != "testsuites":
        return [f"the root is <{root.tag}>, not <testsuites>"]
    attrs(root, SUITES_ATTRS)
    suites = list(root)
    if not suites:
        p("no <testsuite>")
    for s in suites:
        if s.tag != "testsuite":
            p(f"<testsuites> holds <{s.tag}>")
            continue
        attrs(s, SUITE_ATTRS, required=("name", "tests"))
        cases = [c for c in s if c.tag == "testcase"]
        for c in s:
            if c.tag not in ("testcase", "properties", "system-out", "system-err"):
                p(f"<testsuite> holds <{c.tag}>")
        counted = {"tests": len(cases), "failures": 0, "errors": 0, "skipped": 0}
        for c in cases:
            attrs(c, CASE_ATTRS, required=("name", "classname", "time"))
            kids = [k.tag for k in c]
            results = [k for k in c if k.tag in ("failure", "error", "skipped")]
            if len({r.tag for r in results}) > 1 or len([r for r in results if r.tag == "skipped"]) > 1:
                p(f"testcase {c.get('name')!r}: more than one kind of result: {kids}")
            order = [k for k in kids if k in ("system-out", "system-err")]
            if kids[len(results):] != order or any(k not in ("failure", "error", "skipped", "system-out", "system-err") for k in kids):
                p(f"testcase {c.get('name')!r}: children out of the schema's order: {kids}")
            for r in results:
                attrs(r, RESULT_ATTRS)
                if r.tag == "failure":
                    counted["failures"] += 1
                    for a in ("type", "message"):
                        if not r.get(a):
                            p(f"testcase {c.get('name')!r}: <failure> without a {a}")
                    if not (r.text or "").strip():
                        p(f"testcase {c.get('name')!r}: <failure> without a body (CI shows nothing)")
                elif r.tag == "error":
                    counted["errors"] += 1
                else:
                    counted["skipped"] += 1
        for k, n in counted.items():
            if k in s.attrib and int(s.get(k)) != n:
                p(f"<testsuite {k}={s.get(k)}> but {n} counted")
    return problems


if __name__ == "__main__":
    found = check(sys.argv[1])
    for line in found:
        print(f"{sys.argv[1]}: {line}")
    sys.exit(1 if found else 0)
