"""`torch.distributed.elastic`: what launcher-run programs import from it (the `record`
decorator of `multiprocessing.errors`). ember's launcher is `ember.distributed.run`."""
