# expect: marked
"""xla_dist driven as a library (Lightning 1.x's TPU spawn for pods)."""
import sys

from torch_xla.distributed import xla_dist


def launch_on_pod(argv):
    parser = xla_dist.get_args_parser()
    xla_dist.resolve_and_execute(parser.parse_args(argv))


if __name__ == '__main__':
    print("would launch", sys.argv[1:])
