# Read by the bash of every simulated worker (BASH_ENV, see workers.py) before its command.
# The worker's /etc/profile is worker_profile.sh beside this file: `. /etc/profile` reads that
# one, never this machine's (which may reset PATH and would hide the worker's tools).
.() {
  if [ "${1:-}" = /etc/profile ]; then
    builtin . "${BASH_SOURCE[0]%/*}/worker_profile.sh"
  else
    builtin . "$@"
  fi
}
