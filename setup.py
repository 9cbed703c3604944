"""One build step pyproject.toml cannot say: the guide (docs/*.md) ships inside the package,
as xrt2pjrt/docs/, so that `xrt2pjrt guide` finds it in an installed copy. Everything else
is in pyproject.toml."""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithGuide(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib, "xrt2pjrt", "docs")
        self.mkpath(str(target))
        for page in sorted(Path(__file__).resolve().parent.joinpath("docs").glob("*.md")):
            self.copy_file(str(page), str(target / page.name))


setup(cmdclass={"build_py": BuildPyWithGuide})
