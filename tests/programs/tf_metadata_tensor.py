"""Tensor wrappers that carry metadata through torch functions (PyTorch docs, "Extending
torch with a Tensor wrapper type"), and the same as a Tensor subclass built in __new__."""
import torch


class MetadataTensor(object):
    def __init__(self, data, metadata=None, **kwargs):
        self._t = torch.as_tensor(data, **kwargs)
        self._metadata = metadata

    def __repr__(self):
        return "Metadata:\n{}\n\ndata:\n{}".format(self._metadata, self._t)

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        metadatas = tuple(a._metadata for a in args if hasattr(a, '_metadata'))
        args = [getattr(a, '_t', a) for a in args]
        assert len(metadatas) > 0
        ret = func(*args, **kwargs)
        return MetadataTensor(ret, metadata=metadatas[0])


metadata = {'owner': 'Ministry of Silly Walks'}
m = MetadataTensor([[1, 2], [3, 4]], metadata=metadata)
t = torch.tensor([[1, 2], [1, 2]])
print(torch.add(t, m))
print(torch.mul(t, m))
print(torch.sum(m))


class TaggedTensor(torch.Tensor):
    """A subclass whose results keep the tags of their inputs."""

    @staticmethod
    def __new__(cls, data, tags=()):
        t = torch.Tensor._make_subclass(cls, torch.as_tensor(data, dtype=torch.float32))
        t.tags = tuple(tags)
        return t

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        tags = []
        for a in list(args) + list(kwargs.values()):
            for item in (a if isinstance(a, (list, tuple)) else [a]):
                tags.extend(t for t in getattr(item, "tags", ()) if t not in tags)
        out = super().__torch_function__(func, types, args, kwargs)
        if isinstance(out, TaggedTensor):
            out.tags = tuple(tags)
        return out


a = TaggedTensor([1.0, 2.0, 3.0], tags=["sensor-a"])
b = TaggedTensor([0.5, 0.5, 0.5], tags=["calibrated"])
c = (a - b) * 10
print(type(c).__name__, c.tags, c)
s = torch.cat([a, b])
print(type(s).__name__, s.tags, s.shape)
n = c.norm()
print(type(n).__name__, n.tags, f"{n.item():.4f}")
u = a.as_subclass(torch.Tensor)
print(type(u).__name__, u + 1)
print(isinstance(a, torch.Tensor), a.tags, a.dtype, a.requires_grad)
g = TaggedTensor(torch.ones(3), tags=["w"]).requires_grad_()
(g * a).sum().backward()
print("grad:", g.grad, type(g.grad).__name__)
