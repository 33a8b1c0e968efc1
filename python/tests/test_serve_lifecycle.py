"""A server whose parent was killed (kill -9) stops, though the parent's end of its stderr went with it."""

import os
import subprocess
import sys
import time
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])

CHILD = """
import sys
from massgen_rl_serving.lifecycle import Lifecycle
life = Lifecycle()
life.watch_parent()
life.stop.wait(20)
open(sys.argv[1], "w").write(life.signal_name or "not stopped")
"""

PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
print(child.pid, flush=True)
time.sleep(60)
"""


def test_parent_killed_stops_the_server_though_its_stderr_is_gone(tmp_path):
    marker = tmp_path / "stopped"
    env = {**os.environ, "PYTHONPATH": PACKAGE_ROOT}
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, CHILD, str(marker)], stdout=subprocess.PIPE, text=True, env=env
    )
    int(parent.stdout.readline())
    time.sleep(1.5)  # the child's watch has seen its parent
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 15
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.read_text() == "parent-exit"
