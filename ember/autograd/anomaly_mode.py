"""PyTorch's module path of anomaly detection
(`from torch.autograd.anomaly_mode import detect_anomaly, set_detect_anomaly`)."""

from ember.core.anomaly_mode import detect_anomaly, set_detect_anomaly

__all__ = ["detect_anomaly", "set_detect_anomaly"]
