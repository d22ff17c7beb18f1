"""PyTorch's module of anomaly detection (`from torch.autograd.anomaly_mode import
detect_anomaly, set_detect_anomaly`), where its classes print and pickle from; their code
is in ember.core.anomaly_mode."""

import sys

from ember.core.anomaly_mode import detect_anomaly, set_detect_anomaly
from ember.core.dtype import place_in

__all__ = ["detect_anomaly", "set_detect_anomaly"]

place_in(sys.modules[__name__], detect_anomaly, set_detect_anomaly)
