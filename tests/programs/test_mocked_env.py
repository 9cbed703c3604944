# expect: ran
"""A test that mocks the XRT variables for the code it tests (run as a script)."""
import os
from unittest import mock


def shard_ordinal():
    return int(os.environ.get('XRT_SHARD_ORDINAL', '0'))


@mock.patch.dict(os.environ, {'XRT_SHARD_ORDINAL': '3', 'XRT_SHARD_WORLD_SIZE': '4'})
def test_shard_ordinal():
    assert shard_ordinal() == 3


if __name__ == '__main__':
    test_shard_ordinal()
    print("passed")
