"""A plugin whose module raises while it is imported."""

raise ImportError("emb_importfail: simulated missing vendor SDK libfoo.so")
