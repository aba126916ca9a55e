#!/usr/bin/env python3
"""Per-command latency of mini-swe-agent's own environments, next to `cargo bench --bench
bash_only` (aci's bash-only config): the same commands (`true`, `ls -la`, a grep), the same
repository (tests/fixtures/demo/repos/inicfg at /testbed) and the same image.

mini's DockerEnvironment runs every command as its own `docker exec ... bash -lc CMD`; its
LocalEnvironment as a `subprocess.run(CMD, shell=True)` on the host, in a copy of the repository.
Both get mini's SWE-bench environment variables. Run it in a virtualenv with mini-swe-agent:

    python3 -m venv /tmp/venv-mini && /tmp/venv-mini/bin/pip install mini-swe-agent
    /tmp/venv-mini/bin/python benches/mini_latency.py [--image aci-python:bookworm] [--runs 50]

It prints one line per environment and command: the median and the mean in milliseconds. The
container is labelled aci.run_id=bench-mini-latency-<pid> and removed at the end.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from minisweagent.environments.docker import DockerEnvironment
from minisweagent.environments.local import LocalEnvironment

COMMANDS = [("true", "true"), ("ls_la", "ls -la"), ("grep", "grep -rn _OPTION_RE .")]
MINI_ENV = {
    "PAGER": "cat",
    "MANPAGER": "cat",
    "LESS": "-R",
    "PIP_PROGRESS_BAR": "off",
    "TQDM_DISABLE": "1",
}
REPO = Path(__file__).resolve().parent.parent / "tests/fixtures/demo/repos/inicfg"


def git_repo(path: Path) -> None:
    """The repository as aci sets it up: a git work tree with one commit."""
    git = ["git", "-c", "user.name=aci", "-c", "user.email=aci@localhost", "-C", str(path)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        subprocess.run(git + args, check=True)


def execute(env, command: str) -> dict:
    # mini 2.x takes an action dict, 1.x the command string.
    try:
        return env.execute({"command": command})
    except (TypeError, AttributeError):
        return env.execute(command)


def time_commands(name: str, env, runs: int) -> None:
    for label, command in COMMANDS:
        result = execute(env, command)
        assert result["returncode"] == 0, (command, result)
        samples = []
        for _ in range(runs):
            start = time.perf_counter()
            execute(env, command)
            samples.append((time.perf_counter() - start) * 1000)
        print(
            f"{name:<7} {label:<6} median {statistics.median(samples):7.1f} ms"
            f"  mean {statistics.mean(samples):7.1f} ms  ({runs} runs)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="aci-python:bookworm")
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as scratch:
        repo = Path(scratch) / "testbed"
        shutil.copytree(REPO, repo)
        git_repo(repo)

        local = LocalEnvironment(cwd=str(repo), env=MINI_ENV, timeout=60)
        time_commands("local", local, args.runs)

        label = f"aci.run_id=bench-mini-latency-{os.getpid()}"
        docker = DockerEnvironment(
            image=args.image,
            cwd="/testbed",
            env=MINI_ENV,
            timeout=60,
            run_args=["--rm", "--label", label, "--network", "none"],
        )
        try:
            container = docker.container_id
            # `-w /testbed` made the directory: copy the repository's contents into it.
            subprocess.run(["docker", "cp", f"{repo}/.", f"{container}:/testbed"], check=True)
            listing = execute(docker, "ls")["output"].split()
            assert "inicfg" in listing and "tests" in listing, listing
            time_commands("docker", docker, args.runs)
        finally:
            subprocess.run(["docker", "rm", "-f", docker.container_id], capture_output=True)
            docker.container_id = None


if __name__ == "__main__":
    main()
