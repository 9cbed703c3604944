"""imports of torch_xla modules that are gone."""
