"""torch.distributed on `tpu`: the `tpu_dist` process-group backend and its transports."""
