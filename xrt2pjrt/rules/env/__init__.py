"""XRT-era environment variables, in code, scripts, Dockerfiles and YAML.

From torch_xla 2.1 every ``XRT_*`` variable is silently ignored. The Python rules share one
mechanism (python/environment.py), the text rules another (text/environment.py); each rule
only says what becomes of its variables.
"""
