"""Write xrt2pjrt/library_files.txt: the files torch_xla's releases ship under torch_xla/, read
from a git clone of pytorch/xla at its release tags. A project holding a copy of torch_xla
keeps these as they are (the 2.9 wheel replaces them) and has its own files beside them migrated.

    python tools/library_files.py PATH-TO-PYTORCH-XLA-GIT
"""

import re
import subprocess
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "xrt2pjrt" / "library_files.txt"
HEADER = """\
# The files torch_xla's releases ({first} ... {last}) ship under torch_xla/, relative to it, read
# from pytorch/xla's release tags by tools/library_files.py (do not edit by hand: run it again).
"""


def main(git_dir: str) -> None:
    tags = subprocess.run(["git", "--git-dir", git_dir, "tag"], capture_output=True, text=True, check=True).stdout
    releases = sorted(
        (tag for tag in tags.split() if re.fullmatch(r"v\d+\.\d+\.\d+", tag)),
        key=lambda tag: tuple(map(int, tag[1:].split("."))),
    )
    paths = set()
    for tag in releases:
        listed = subprocess.run(
            ["git", "--git-dir", git_dir, "ls-tree", "-r", "--name-only", tag, "--", "torch_xla/"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        paths.update(line.removeprefix("torch_xla/") for line in listed.splitlines())
    header = HEADER.format(first=releases[0], last=releases[-1])
    OUT.write_text(header + "".join(f"{path}\n" for path in sorted(paths)))
    print(f"{OUT}: {len(paths)} files of {len(releases)} releases")


if __name__ == "__main__":
    main(sys.argv[1])
