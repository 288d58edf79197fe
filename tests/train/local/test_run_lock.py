"""The run folder's lock (`isocompute train`): a second trainer of a run that is being
trained stops with one line naming the holder; a killed trainer leaves no lock behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys

import pytest

from isocompute.cli.train import LOCK_FILE, run_lock
from isocompute.errors import InputError


def test_a_second_trainer_of_a_live_run_is_refused(tmp_path):
    run = tmp_path / "runs" / "easy" / "bp4_n2"
    with run_lock(run):
        assert (run / LOCK_FILE).read_text().startswith(f"{os.getpid()}@")
        with pytest.raises(InputError, match=rf"another process \(pid {os.getpid()}@.*\) is training this run"):
            with run_lock(run):
                pass
    with run_lock(run):             # released: the next trainer (a resume) takes it
        pass


def test_a_killed_trainer_leaves_no_lock(tmp_path):
    run = tmp_path / "bp4_n2"
    code = ("import sys, time; from isocompute.cli.train import run_lock\n"
            f"with run_lock({str(run)!r}):\n    print('locked', flush=True); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "locked"
        with pytest.raises(InputError, match=f"pid {proc.pid}@"):
            with run_lock(run):
                pass
    finally:
        proc.send_signal(signal.SIGKILL)      # a lost node: no cleanup
        proc.wait()
    with run_lock(run):
        pass


def test_a_forked_child_does_not_keep_the_lock(tmp_path):
    # Grader workers are forked from the trainer: were they to share the lock, a killed trainer's
    # orphaned workers would keep its run locked, and the resume would be refused.
    run = tmp_path / "bp4_n2"
    code = ("import os, signal, sys, time; from isocompute.cli.train import run_lock\n"
            f"with run_lock({str(run)!r}):\n"
            "    child = os.fork()\n"
            "    if child == 0:\n        os.write(1, f'child {os.getpid()}\\n'.encode()); time.sleep(60); os._exit(0)\n"
            "    os.write(1, f'parent {child}\\n'.encode()); time.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    # Both have spoken: the child is past its fork hooks (where it closes the lock).
    text = ""
    while not re.search(r"child \d+\n", text) or not re.search(r"parent \d+\n", text):
        line = proc.stdout.readline()
        assert line, f"the trainer stopped early: {text!r}"
        text += line
    child = int(re.search(r"child (\d+)", text).group(1))
    assert int(re.search(r"parent (\d+)", text).group(1)) == child
    try:
        proc.send_signal(signal.SIGKILL)      # the trainer dies; its forked child lives on
        proc.wait()
        with run_lock(run):
            pass
    finally:
        os.kill(child, signal.SIGKILL)
