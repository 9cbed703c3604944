# The simulated worker's /etc/profile (see worker_startup.sh). A login shell reads it; the
# non-interactive, non-login shell that ssh gives a command does not. What it sets up here is
# what conda's /etc/profile.d/conda.sh sets up on a real worker: the `conda` shell function,
# without which `conda activate` fails (worker_bin/record), and which activates the
# environment in the calling shell.
export STAND_IN_PROFILE_READ=1
conda() {
  if [ "${1:-}" = activate ]; then
    STAND_IN_CONDA_SHELL=1 command conda "$@" && export CONDA_DEFAULT_ENV="${2:-base}"
  else
    command conda "$@"
  fi
}
