"""--target shim: imports pointed at xrt2pjrt.shim."""
