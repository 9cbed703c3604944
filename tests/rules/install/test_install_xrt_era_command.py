"""install-xrt-era-command beyond its examples: what a package's setup() lists."""

from python_migrate import migrate


def test_an_extra_of_setup_that_installs_an_xrt_era_release_is_reported():
    # round 13: a library's TPU extra pins torch_xla 1.x, which pip installs beside the program
    out = migrate(
        "from setuptools import setup\n\nsetup(\n    name='lib',\n    install_requires=['numpy'],\n"
        "    extras_require={'tpu': ['torch-xla==1.12', 'cloud-tpu-client']},\n)\n"
    )
    assert [(item.rule, item.message) for item in out.manual] == [
        ("install-xrt-era-command", "install torch and torch_xla 2.9.0")
    ]


def test_an_environment_handed_to_a_command_is_no_install():
    assert not migrate("import subprocess\n\nsubprocess.run(['python', 't.py'], env={'V': 'torch_xla 1.13'})\n").manual


def test_a_notebooks_variable_that_a_command_expands_is_read():
    # round 13: Kaggle kernels exported to .py name the XRT-era bucket once, then copy wheels from it
    source = (
        "WHEELS = 'gs://tpu-pytorch/wheels'\nXLA = 'torch_xla-nightly-cp36-cp36m-linux_x86_64.whl'\n"
        "get_ipython().system('gsutil cp \"$WHEELS/$XLA\" .')\nget_ipython().system('pip install \"$XLA\"')\n"
    )
    assert [(item.line, item.rule) for item in migrate(source).manual] == [(1, "install-xrt-era-command")]
    assert not migrate("WHEELS = 'gs://tpu-pytorch/wheels'\nprint(WHEELS)\n").manual  # named, never fetched


def test_a_copy_of_the_env_setup_installer_is_reported_at_its_bucket():
    # round 14: a GAN project kept its own copy of the 2020 installer, which fetches its wheels
    # with argument lists built from a module-level bucket
    source = (
        "import subprocess\n\nBUCKET = 'gs://tpu-pytorch/wheels'\nWHEEL = 'torch_xla-{v}-cp36-cp36m-linux_x86_64.whl'\n\n"
        "def install(v):\n    wheel = WHEEL.format(v=v)\n"
        "    for cmd in (['gsutil', 'cp', BUCKET + '/' + wheel, '.'], ['pip', 'install', wheel]):\n"
        "        subprocess.call(cmd)\n"
    )
    assert [(item.line, item.rule) for item in migrate(source).manual] == [(3, "install-xrt-era-command")]
    # the same bucket in a file that runs no command: named, never fetched
    assert not migrate("import subprocess\n\nBUCKET = 'gs://tpu-pytorch/wheels'\nsubprocess.call(['ls'])\n").manual
