#!/usr/bin/env python3
"""Checkpoint/restart of apps/stencil (ctest apps.stencil.checkpoint.*): a run restarted from a
checkpoint ends with the same grids, bit for bit, and the same norm as an uninterrupted run — at
the same rank count and variant, at another rank count and with another variant — and a rank
killed in the middle of a checkpoint (--crash-in-checkpoint, testing only) leaves the previous
checkpoint intact: it still loads, and the run restarted from it reproduces the uninterrupted
result.

Usage: stencil_checkpoint.py LAUNCHER STENCIL SCRATCH_DIR NP VARIANT OTHER_NP OTHER_VARIANT
"""
import os
import re
import shutil
import struct
import subprocess
import sys

HEADER = 4096
CRASH_STATUS = 86  # what --crash-in-checkpoint's rank exits with


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(launcher, stencil, np, args, expect_status=0):
    cmd = [launcher, "-n", str(np), "--timeout", "60", stencil, "--n", "61", "--radius", "2",
           "--iterations", "10"] + args
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=90)
    print("$ " + " ".join(cmd) + "\n" + p.stdout)
    if p.returncode != expect_status:
        fail(f"exit status {p.returncode}, expected {expect_status}")
    return p.stdout


def norm(out):
    m = re.search(r"Solution norm += (\S+)", out)
    if not m or "Solution validates" not in out:
        fail("no validated norm in the output")
    return m.group(1)


def metadata(path):
    with open(path, "rb") as f:
        head = f.read(HEADER)
    if len(head) < HEADER or head[:8] != b"OSDARRAY":
        fail(f"{path} is not an array file")
    (length,) = struct.unpack_from("<I", head, 176)
    return head[184:184 + length].decode()


def data(path):
    with open(path, "rb") as f:
        return f.read()[HEADER:]


def main():
    launcher, stencil, scratch, np, variant, other_np, other_variant = sys.argv[1:8]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    p = lambda name: os.path.join(scratch, name)  # noqa: E731
    try:
        # The uninterrupted run, and the same run taking checkpoints (which change nothing).
        full = norm(run(launcher, stencil, np, ["--variant", variant, "--save-final", p("full")]))
        out = run(launcher, stencil, np, ["--variant", variant, "--checkpoint-every", "3",
                                          "--checkpoint", p("ck"), "--save-final", p("ckfull")])
        if norm(out) != full or data(p("ckfull")) != data(p("full")):
            fail("taking checkpoints changed the result")
        if out.count("Checkpoint ") != 3 or os.path.exists(p("ck.tmp")):
            fail("expected 3 committed checkpoints (after 3, 6 and 9 iterations) and no .tmp")
        if "done=9" not in metadata(p("ck")):
            fail("the last checkpoint should hold 9 iterations: " + metadata(p("ck")))
        # Restarted from it: the same rank count and variant, then others.
        out = run(launcher, stencil, np, ["--variant", variant, "--restart", p("ck"),
                                          "--save-final", p("again")])
        if norm(out) != full or open(p("again"), "rb").read() != open(p("full"), "rb").read():
            fail("the restarted run's final state differs from the uninterrupted run's")
        out = run(launcher, stencil, other_np, ["--variant", other_variant, "--restart", p("ck"),
                                                "--save-final", p("other")])
        if data(p("other")) != data(p("full")):
            fail(f"restarted at {other_np} ranks ({other_variant}) the final grids differ")
        # A rank dies in the middle of the second checkpoint: the first stays intact.
        out = run(launcher, stencil, np, ["--variant", variant, "--checkpoint-every", "3",
                                          "--checkpoint", p("crash"), "--crash-in-checkpoint",
                                          "2"], expect_status=CRASH_STATUS)
        if "exiting mid-checkpoint" not in out:
            fail("the injected crash did not happen")
        if "done=3" not in metadata(p("crash")):
            fail("the previous checkpoint was replaced: " + metadata(p("crash")))
        out = run(launcher, stencil, np, ["--variant", variant, "--restart", p("crash"),
                                          "--save-final", p("recovered")])
        if "after 3 iterations" not in out or norm(out) != full:
            fail("the run restarted from the surviving checkpoint differs")
        if data(p("recovered")) != data(p("full")):
            fail("the run restarted after the crash ends with other grids")
        # A checkpoint of another grid does not fit.
        run(launcher, stencil, np, ["--variant", variant, "--n", "60", "--restart", p("ck")],
            expect_status=1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("checkpoint/restart: bit-identical")


if __name__ == "__main__":
    main()
