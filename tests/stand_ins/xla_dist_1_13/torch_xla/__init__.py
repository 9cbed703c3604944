"""Stand-in package for the test suite: only distributed.xla_dist (a simulation)."""
