"""The runtime commands: what runs a migrated program, beside the migrate engine that rewrites it.

``xrt2pjrt launch`` (launch.py; tpu_health.py, the TPU as gcloud describes it) runs a
program on every worker of a TPU pod; ``xrt2pjrt run`` (run.py; run_items.py, what a run
says of the items a migration left) runs it as CPU replicas; ``xrt2pjrt verify`` (verify.py;
verify_checks.py, the checks each replica runs) and ``xrt2pjrt doctor`` (doctor.py) read the
environment a program would run in.
"""
