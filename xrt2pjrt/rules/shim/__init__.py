"""--target shim: imports pointed at the shim, carried into the project as xrt2pjrt_shim."""
