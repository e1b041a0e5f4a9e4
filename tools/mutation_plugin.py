"""pytest plugin for tools/mutation.py's coverage run (loaded with ``-p mutation_plugin``; never in CI).

Coverage.py is started by its own ``.pth`` hook (``COVERAGE_PROCESS_START`` names the run's
config file, in this process and in every Python subprocess that inherits the environment). This
plugin gives each test its own coverage context, its node id:

- in this process, ``Coverage.switch_context(nodeid)`` around the test's setup, call and
  teardown, so the lines a test runs, in any thread, are recorded under its id;
- a fixture wider than a function (module, session) is set up under the context
  ``fixture:NAME``: the lines it runs count for every test that uses a fixture of that name;
- in subprocesses, the config's static context is ``${TC_MUT_TEST}``, which this plugin sets to the
  running test's node id before the test starts its processes.

At the end it writes, to the JSON file named by ``TC_MUT_PLUGIN_OUT``: the node ids in collection
order, each one's duration (setup + call + teardown, seconds) and fixture names, and the time
the session took to start and collect.
"""

from __future__ import annotations

import json
import os
import time

import pytest

_T0 = time.monotonic()
_DATA: dict = {"order": [], "durations": {}, "fixtures": {}, "collect_seconds": 0.0, "failed": []}


def _switch(context: str) -> None:
    try:
        import coverage
    except ImportError:  # pragma: no cover - the tool installs coverage before it runs
        return
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(context)


def pytest_collection_finish(session):
    _DATA["collect_seconds"] = time.monotonic() - _T0
    for item in session.items:
        _DATA["order"].append(item.nodeid)
        _DATA["fixtures"][item.nodeid] = sorted(getattr(item, "fixturenames", ()))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    os.environ["TC_MUT_TEST"] = item.nodeid
    _switch(item.nodeid)
    yield
    _switch("")
    os.environ["TC_MUT_TEST"] = ""


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    wide = fixturedef.scope != "function"
    test = os.environ.get("TC_MUT_TEST", "")
    if wide:
        os.environ["TC_MUT_TEST"] = f"fixture:{fixturedef.argname}"
        _switch(os.environ["TC_MUT_TEST"])
    yield
    if wide:
        os.environ["TC_MUT_TEST"] = test
        _switch(test)


def pytest_runtest_logreport(report):
    _DATA["durations"][report.nodeid] = _DATA["durations"].get(report.nodeid, 0.0) + report.duration
    if report.failed:
        _DATA["failed"].append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    out = os.environ.get("TC_MUT_PLUGIN_OUT")
    if out:
        with open(out, "w", encoding="utf-8") as fh:
            json.dump(_DATA, fh)
