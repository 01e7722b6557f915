"""Per-job cgroups: how a forked job enters its cgroup and leaves nothing behind, why a machine
gets the rlimit fallback, and what an out-of-memory kill inside the job's cgroup means."""

from __future__ import annotations

import os
import signal
import uuid

import pytest

from rewards.rendering import cgroups
from rewards.rendering.worker import _verdict

MOUNT = cgroups._cgroup2_mount()


@pytest.mark.skipif(MOUNT is None or not os.access(MOUNT, os.W_OK), reason="needs a writable cgroup v2 hierarchy")
def test_a_forked_job_moves_itself_in_and_its_cgroup_is_removed_after_it() -> None:
    """The kernel path, without controllers (this needs none): the worker opens ``cgroup.procs``,
    the forked child writes itself in, the worker removes the emptied cgroup."""
    worker_dir = os.path.join(MOUNT, f"zoo-render-test-{uuid.uuid4().hex[:8]}")
    os.mkdir(worker_dir)
    dir_fd = os.open(worker_dir, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.mkdir("job-1", dir_fd=dir_fd)
        job = cgroups.JobCgroup(dir_fd, "job-1", os.open("job-1/cgroup.procs", os.O_WRONLY, dir_fd=dir_fd))
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                job.enter()
                with open("/proc/self/cgroup") as fh:
                    os.write(write_fd, fh.read().encode())
            finally:
                os._exit(0)
        os.close(write_fd)
        seen = os.read(read_fd, 4096).decode()
        os.waitpid(pid, 0)
        assert f"0::{worker_dir[len(MOUNT):]}/job-1\n" in seen, seen
        assert job.finish() is False  # no memory controller here, so no OOM kill to report
        assert not os.path.exists(os.path.join(worker_dir, "job-1"))
    finally:
        os.close(dir_fd)
        cgroups.remove_cgroup(worker_dir)
    assert not os.path.exists(worker_dir)


def test_a_cgroup_outside_the_hierarchy_is_refused_with_the_reason() -> None:
    parent, reason = cgroups.delegated_parent("/tmp")
    assert parent is None
    assert "not inside the cgroup v2 hierarchy" in reason or "no cgroup v2 hierarchy" in reason


def test_a_sigkill_from_the_jobs_own_memory_cap_is_a_model_failure() -> None:
    killed = (signal.SIGKILL, 0.2, False)  # wait status of a SIGKILL-ed process, CPU seconds, not by us
    own, _ = _verdict(b"", False, killed, 10, 5.0, 7, out_of_memory=True)
    host, _ = _verdict(b"", False, killed, 10, 5.0, 7, out_of_memory=False)
    assert own["status"] == "invalid" and "memory limit" in own["error"]
    assert host["status"] == "infra"  # the host's OOM killer: not the sample's fault
