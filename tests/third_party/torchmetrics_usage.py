"""torchmetrics as evaluation code uses it: classification and regression metrics, a
MetricCollection updated batch by batch, aggregations, the functional API, image
metrics, reset and state."""
import torch
import torchmetrics as tm
from torchmetrics import MetricCollection
from torchmetrics.aggregation import CatMetric, MaxMetric, MeanMetric, SumMetric
from torchmetrics.classification import (
    BinaryAccuracy,
    BinaryAUROC,
    BinaryAveragePrecision,
    MulticlassAccuracy,
    MulticlassAUROC,
    MulticlassCalibrationError,
    MulticlassConfusionMatrix,
    MulticlassF1Score,
    MulticlassPrecision,
    MulticlassRecall,
    MultilabelAccuracy,
)
from torchmetrics.regression import (
    ExplainedVariance,
    MeanAbsoluteError,
    PearsonCorrCoef,
    R2Score,
    SpearmanCorrCoef,
)

torch.manual_seed(0)
preds = torch.randn(20, 4).softmax(-1)
target = torch.randint(0, 4, (20,))
coll = MetricCollection({
    "acc": MulticlassAccuracy(4), "f1": MulticlassF1Score(4, average="macro"),
    "prec": MulticlassPrecision(4), "rec": MulticlassRecall(4), "auroc": MulticlassAUROC(4),
    "ece": MulticlassCalibrationError(4)})
for i in range(2):
    coll.update(preds[i * 10:(i + 1) * 10], target[i * 10:(i + 1) * 10])
for k, v in coll.compute().items():
    print(k, v)
print(MulticlassConfusionMatrix(4)(preds, target))
bp, bt = torch.rand(30), torch.randint(0, 2, (30,))
print(BinaryAUROC()(bp, bt), BinaryAccuracy()(bp, bt), BinaryAveragePrecision()(bp, bt))
print(MultilabelAccuracy(3)(torch.rand(5, 3), torch.randint(0, 2, (5, 3))))
x = torch.randn(50)
y = 2 * x + 0.1 * torch.randn(50)
for metric in (R2Score, MeanAbsoluteError, PearsonCorrCoef, SpearmanCorrCoef, ExplainedVariance):
    print(metric.__name__, metric()(x, y))
mean = MeanMetric()
mean.update(torch.tensor([1.0, 2.0]))
mean.update(3.0, weight=2.0)
print(mean.compute())
total = SumMetric()
total(torch.tensor(2.0))
total(torch.tensor(5.0))
print(total.compute())
top = MaxMetric()
top(torch.tensor([1.0, 9.0, 3.0]))
print(top.compute())
cat = CatMetric()
cat(torch.tensor([1.0]))
cat(torch.tensor([2.0, 3.0]))
print(cat.compute())
print(tm.functional.accuracy(preds, target, task="multiclass", num_classes=4))
a, b = torch.rand(1, 3, 16, 16), torch.rand(1, 3, 16, 16)
print(tm.functional.image.peak_signal_noise_ratio(a, b, data_range=1.0))
print(tm.functional.image.structural_similarity_index_measure(a, b, data_range=1.0))
coll.reset()
print(coll)
acc = MulticlassAccuracy(4)
acc.update(preds, target)
print(acc.compute(), acc.state_dict())
