"""Stand-in for torch_xla 1.13's ``xla_dist`` in the test suite: a simulation of how it ran
a command on every worker of a pod, written from reading its source (not a copy).

It takes the same flags through argparse (so `--flag=value`, abbreviations and `--` behave
as they did) and, for each worker, builds the script xla_dist wrote: ``export`` lines for
its XRT variables and for each ``--env``, ``. /etc/profile`` (xla_dist: "Setup environment
for non-interactive non-login shell over ssh"), then ``conda activate ENV``, a ``docker
run`` line, or the command itself — every word wrapped in double quotes unless it already
starts and ends with one, words joined by spaces, lines by ``; ``. The scripts run on the
simulated pod of tests/stand_ins/workers.py. Not simulated: the XRT server, the health
checks and restarts.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
from workers import run_workers, worker_count  # noqa: E402


def quoted(words, sep=" "):
    return sep.join(w if len(w) > 1 and w[0] == w[-1] == '"' else f'"{w}"' for w in words)


def script(worker, n, flags):
    lines = [
        ["export", f"XRT_LOCAL_WORKER=c_localservice:{worker}"],
        ["export", f"XRT_SHARD_WORLD_SIZE={n}"],
        ["export", f"XRT_SHARD_ORDINAL={worker}"],
    ]
    if worker == 0:
        lines.append(
            [
                "export",
                "XRT_TPU_CONFIG="
                + "|".join(f"c_localservice;{i};10.0.0.{i + 2}:{flags.tpuvm_server_port}" for i in range(n)),
            ]
        )
    lines += [["export", kv] for kv in flags.env or []]
    lines.append([".", "/etc/profile"])
    if flags.docker_image:
        docker = [
            "docker",
            "run",
            f"--name={flags.docker_container or 'pytorchtpudistrunner'}",
            "--network=host",
            *(flags.docker_run_flag or []),
        ]
        docker += ["-e", "XRT_TPU_CONFIG", "-e", "XRT_LOCAL_WORKER"]
        docker += [x for kv in flags.env or [] for x in ("-e", kv.partition("=")[0])]
        lines.append(docker + [flags.docker_image] + flags.positional)
    else:
        if flags.conda_env:
            lines.append(["conda", "activate", flags.conda_env])
        lines.append(flags.positional)
    return quoted([quoted(line) for line in lines], sep="; ")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tpu", required=True)
    parser.add_argument("--vm", action="append")
    parser.add_argument("--docker-container", default="")
    parser.add_argument("--docker-image", default="")
    parser.add_argument("--docker-run-flag", action="append")
    parser.add_argument("--conda-env", default="")
    parser.add_argument("--env", action="append")
    parser.add_argument("--restart-tpuvm-pod-server", action="store_true")
    parser.add_argument("--tpuvm-server-port", default=51011, type=int)
    parser.add_argument("positional", nargs="+")
    flags = parser.parse_args()
    n = worker_count()
    return run_workers({w: script(w, n, flags) for w in range(n)})


if __name__ == "__main__":
    sys.exit(main())
