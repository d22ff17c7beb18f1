"""The parts of ember.utils.benchmark, at PyTorch's paths (`torch.utils.benchmark.utils.
common.Measurement` ...)."""
