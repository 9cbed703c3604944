"""Install lines that bring back an XRT-era torch_xla: reported, never rewritten.

Migrated code runs only on the torch_xla it was migrated for (``--target-version``), but a
repository's install lines often still fetch the old one: the wheels of the
``tpu-pytorch`` bucket (torch_xla 1.x and 2.0 builds, the nightlies of the seed issues
among them), ``torch_xla==1.13`` pins, ``gcr.io/tpu-pytorch/xla:r1.13_3.8_tpuvm`` images,
Colab's ``pytorch-xla-env-setup.py``, ``cloud-tpu-client``, and the TPU VM runtime versions
whose image holds torch_xla 1.x (``gcloud ... --version=tpu-vm-pt-1.13``, ``tpu-vm-v4-pt-1.13``,
``RUNTIME_VERSION=tpu-vm-pt-1.13``), and in a project that uses torch_xla, a lone
``torch==1.13`` pin (a requirements file that installs no torch_xla: only an XRT-era
torch_xla matches that torch), and a release without XRT older than the one whose APIs the
migration wrote into the code (rules/install/install_xrt_era_release.py). Choosing the new versions
(torch, torchvision and torch_xla move together; libtpu comes with ``torch_xla[tpu]``) is
a person's decision, so each such spot is a manual item saying what to install instead.
libtpu nightlies and cloud-tpu-client are reported only in files that use PyTorch: JAX and
TensorFlow set-ups install them too; a libtpu nightly built after October 2023 (the last
XRT-era torch_xla) is not: it goes with a torch_xla without XRT.

One check (``finding``) serves every place an install can be written: shell commands (and
so Dockerfile RUN lines, YAML commands, Markdown code blocks and notebook ``!`` lines),
Dockerfile ``FROM`` images, YAML images, requirements files and jsonnet configs, each of
which hands its words to the text rules' ``word`` hook (rules/install/).
"""

from __future__ import annotations

import re

from xrt2pjrt.report import Advice

# What a text must mention for an install of torch_xla to be in it (part of the shell trigger).
WORDS = (
    r"(?i:torch[_-]xla|tpu-pytorch|cloud[_-]tpu[_-]client|env-setup\.py|libtpu|tpu-vm-(?:v4-)?(?:pt-|base)"
    r"|v2-alpha|\btorch\s*(?:===?|~=|<=?)\s*v?1\.)"
)

XRT_REMOVED = (2, 1)  # the first torch_xla without XRT
# A file that names torch_xla installs it (or a library for it) itself, whatever code it serves.
INSTALLS_TORCH_XLA = re.compile(r"(?i)torch[_-]xla")

# The registry of torch_xla's images since 2.1, and the last GPU image it lists (2.8's README: 2.7).
REGISTRY = "us-central1-docker.pkg.dev/tpu-pytorch-releases/docker"
GPU_IMAGE = f"{REGISTRY}/xla:r2.7.0_3.10_cuda_12.6"

# Whatever its version: (pattern, what it is, whether only PyTorch installs it, what to do:
# None for installing the target release, what to use instead: the install line or the image).
_ALWAYS_XRT_ERA = (
    (
        re.compile(r"tpu-pytorch/wheels/|^gs://tpu-pytorch/"),
        "a wheel from the XRT-era tpu-pytorch bucket (torch_xla 1.x/2.0 builds)",
        True,
        None,
        "install",
    ),
    (
        # its GPU images (xla:r1.13_3.7_cuda_11.2): no TPU image replaces one
        re.compile(r"gcr\.io/tpu-pytorch/\S*cuda"),
        "a GPU image from the XRT-era gcr.io/tpu-pytorch registry; torch_xla 2.9 has no CUDA build: stay on "
        f"torch_xla 2.8 for GPUs, or use the last GPU image listed, {GPU_IMAGE}",
        True,
        "stay on torch_xla 2.8 for GPUs",
        "gpu",
    ),
    (
        re.compile(r"gcr\.io/tpu-pytorch/"),
        "an image from the XRT-era gcr.io/tpu-pytorch registry",
        True,
        "use an xla:r{version}_* image instead",
        "image",
    ),
    (
        re.compile(r"(?i)cloud[_-]tpu[_-]client"),
        "cloud-tpu-client, which set up TPU Nodes for XRT (TPU VMs under PJRT need nothing like it)",
        False,
        "remove it: TPU VMs need none",
        None,
    ),
    (
        re.compile(r"env-setup\.py$"),
        "pytorch-xla-env-setup.py, which installs XRT-era torch_xla builds",
        True,
        None,
        "install",
    ),
    (
        # the TPU VM images of the XRT years: Ubuntu 20.04, whose Python 3.8 no torch_xla
        # from 2.5 installs on (2.9 needs 3.10, pyproject.toml at v2.9.0)
        re.compile(r"(?:^|=)(?:v2-alpha(?:-tpuv4(?:-pod)?)?|tpu-vm-(?:v4-)?base)$"),
        "a TPU VM image of the XRT years (Ubuntu 20.04, Python 3.8; torch_xla 2.9 needs Python 3.10+)",
        False,
        "use tpu-ubuntu2204-base as its image",
        "runtime",
    ),
    (
        # Compute Engine images for a TPU node's client VM: torch_xla 1.x in conda environments
        re.compile(r"image-family=torch-xla$|(?:^|=|/)debian-\d+-torch-xla(?:-v\d{8})?$"),
        "a Compute Engine image for a TPU node's client VM (torch_xla 1.x); PJRT runs on the TPU VM itself",
        True,
        "run on a TPU VM: tpu-ubuntu2204-base",
        "runtime",
    ),
    (
        re.compile(r"libtpu[-_]nightly"),
        "an old libtpu nightly (torch_xla[tpu] brings the libtpu that matches it)",
        False,
        "drop it; torch_xla[tpu] has libtpu",
        None,
    ),
    (
        re.compile(r"(?i)^torch[_-]xla\[[^\]]*\btpuvm\b[^=~<]*$"),
        "the [tpuvm] extra, gone from torch_xla 2.1",
        True,
        "install torch_xla[tpu] {version}",
        "install",
    ),
)
# A TPU VM runtime version (``gcloud ... --version=tpu-vm-pt-1.13``, ``RUNTIME_VERSION=``): its
# image comes with that torch_xla installed.
_RUNTIME_VERSION = re.compile(r"\btpu-vm-(?:v4-)?pt-(\d+)\.(\d+)\b")
# Where a version is written: a pin (==, ~=, <, <=), a wheel's file name, an image's tag.
_VERSION = re.compile(
    r"(?i)^torch[_-]xla(?:\[[^\]]*\])?\s*(?:===?|~=|<=?)\s*v?(\d+)\.(\d+)"
    r"|(?:^|/)torch_xla-(\d+)\.(\d+)[^/]*\.whl$|/xla:[rv]?(\d+)\.(\d+)"
)
# torch pinned to a 1.x release: only an XRT-era torch_xla matches it.
_TORCH_1_PIN = re.compile(r"(?i)^(torch|torchvision|torchaudio)\s*(?:===?|~=|<=?)\s*v?(\d+)\.(\d+)")
_NIGHTLY = re.compile(r"(?i)(?:^|/)torch_xla-nightly\+(\d{8})")
# A nightly from before the 2.1 release (October 2023) predates every release without XRT.
_LAST_XRT_NIGHTLY = "20231009"
# A libtpu nightly's date (libtpu_nightly-0.1.dev20241209): one built after that goes with a
# torch_xla without XRT (a wheel pinned beside a 2.6 nightly is a PJRT-era pair).
_LIBTPU_NIGHTLY = re.compile(r"(?i)libtpu[-_]nightly[^/]*?dev(\d{8})")


def finding(
    word: str, target: tuple[int, int], torch: bool = True, needs: tuple[int, int] | None = None
) -> Advice | None:
    """What to do about installing ``word`` (a requirement, wheel URL, file name or image)
    for code migrated to torch_xla ``target``, in a file that uses PyTorch (``torch``) or
    not, and what is wrong with it; None when nothing is. ``needs``: the oldest release that
    has every spelling the migration wrote into the code the file serves (None: the target);
    a release without XRT at or above it runs that code."""
    instead = _instead(target)
    install = _install(target)
    libtpu = _LIBTPU_NIGHTLY.search(word)
    if libtpu and libtpu.group(1) > _LAST_XRT_NIGHTLY:
        return None
    for pattern, what, torch_only, do, use in _ALWAYS_XRT_ERA:
        if pattern.search(word):
            if use == "gpu":  # (what it says is all there is to do)
                return Advice(do, what, GPU_IMAGE)
            use = {"install": install_line, "image": image, "runtime": _runtime}[use](target) if use else ""
            do = install if do is None else do.format(version=_version(target))
            return Advice(do, f"{what}: {instead}", use) if torch or torch_only else None
    nightly = _NIGHTLY.search(word)
    if nightly and nightly.group(1) <= _LAST_XRT_NIGHTLY:
        return Advice(
            install,
            f"a torch_xla nightly from {nightly.group(1)}, older than 2.1 (the first release without XRT): {instead}",
            install_line(target),
        )
    runtime = _RUNTIME_VERSION.search(word)
    if runtime:
        return _runtime_finding(runtime, target)
    found = _VERSION.search(word)
    if found is None:
        return None
    major, minor = (int(group) for group in found.groups() if group is not None)
    use = image(target) if found.group(5) else install_line(target)
    if (major, minor) < XRT_REMOVED:
        return Advice(install, f"torch_xla {major}.{minor}, an XRT-era release: {instead}", use)
    if (major, minor) >= min(target, needs or target):
        return None
    older = (
        f"older than the {target[0]}.{target[1]} the code was migrated for (--target-version)"
        if needs is None
        else f"older than the {needs[0]}.{needs[1]} whose APIs the migration wrote into the code it serves"
    )
    return Advice(
        install,
        f"torch_xla {major}.{minor} is {older}: {instead}, or migrate again with --target-version {major}.{minor}",
        use,
    )


def torch_pin_finding(word: str, target: tuple[int, int]) -> Advice | None:
    """What is wrong with ``word`` pinning torch 1.x, or the torchvision or torchaudio of a torch
    1.x (torchvision 0.14 goes with torch 1.13, torchaudio 0.13 with 1.13; 0.15 and 2.0 with torch
    2.0), in a project that uses torch_xla, in a file that installs no torch_xla itself (where it
    does, that install's finding says it); None when nothing is."""
    pin = _TORCH_1_PIN.search(word)
    if pin is None:
        return None
    package, major, minor = pin.group(1).lower(), int(pin.group(2)), int(pin.group(3))
    torch_minor, matching = {
        "torch": (minor if major == 1 else None, _version(target)),
        "torchvision": (minor - 1 if major == 0 and minor < 15 else None, f"0.{target[1] + 15}.0"),
        "torchaudio": (minor if major == 0 else None, _version(target)),
    }[package]
    if torch_minor is None:
        return None
    goes_with = "" if package == "torch" else f", the release of torch 1.{torch_minor},"
    return Advice(
        f"pin {package}~={matching} instead",
        f"{package} {major}.{minor}{goes_with} fits only an XRT-era torch_xla: pin {package}~={matching}",
        f"{package}~={matching}",
    )


def _runtime_finding(runtime: re.Match, target: tuple[int, int]) -> Advice | None:
    major, minor = int(runtime.group(1)), int(runtime.group(2))
    if (major, minor) >= target:
        return None
    era = "XRT-era " if (major, minor) < XRT_REMOVED else ""
    return Advice(
        "use tpu-ubuntu2204-base as its image",
        f"{runtime.group()} is a TPU VM image with {era}torch_xla {major}.{minor}: create the VM with "
        f"tpu-ubuntu2204-base, then {_instead(target)}",
        _runtime(target),
    )


def _runtime(target: tuple[int, int]) -> str:
    return "--version=tpu-ubuntu2204-base"


def _version(target: tuple[int, int]) -> str:
    return f"{target[0]}.{target[1]}.0"


def _install(target: tuple[int, int]) -> str:
    """What to do, in a TODO line's few words: install the target release."""
    return f"install torch and torch_xla {_version(target)}"


def _instead(target: tuple[int, int]) -> str:
    version = _version(target)
    return (
        f"install torch~={version} and 'torch_xla[tpu]~={version}' (torchvision to match), or use an "
        f"xla:r{version}_* image from us-central1-docker.pkg.dev/tpu-pytorch-releases/docker"
    )


# The Cloud TPU VM images of each release, as torch_xla 2.9's README lists them (2.3 on).
_FIRST_LISTED_IMAGE = (2, 3)
# Before 2.6, torch_xla[tpu] found its libtpu only through this index (the README's install line).
_LIBTPU_INDEX = "https://storage.googleapis.com/libtpu-releases/index.html"


def image(target: tuple[int, int]) -> str:
    """The whole name of the target release's TPU VM image; none before 2.3 (not listed)."""
    return f"{REGISTRY}/xla:r{_version(target)}_3.10_tpuvm" if target >= _FIRST_LISTED_IMAGE else ""


def install_line(target: tuple[int, int]) -> str:
    """The command that installs the target release on a TPU VM, as its README gives it."""
    version = _version(target)
    if target >= (2, 8):
        return f"pip install torch=={version} 'torch_xla[tpu]=={version}'"
    line = f"pip install torch~={version} 'torch_xla[tpu]~={version}'"
    return line if target >= (2, 6) else f"{line} -f {_LIBTPU_INDEX}"
