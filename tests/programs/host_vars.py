# expect: ran
"""Host rank and count from the XRT variables (hosts, not processes)."""
import os

host = int(os.environ.get('XRT_HOST_ORDINAL', '0'))
hosts = int(os.environ.get('XRT_HOST_WORLD_SIZE', '1'))
rank = int(os.environ.get('XRT_SHARD_ORDINAL', '0'))
assert 0 <= host < hosts, (host, hosts)
print(host, hosts, rank)
