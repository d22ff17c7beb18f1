"""ONNX import converters: string values and the ops on them, run on the host.

ember tensors have no string dtype (PyTorch's have none either), so an ONNX `string`
value is held as a host value, as onnx's reference implementation holds it: a NumPy
array of dtype `object` whose elements are Python `str`. The ops that read or make
strings (StringNormalizer, RegexFullMatch, StringConcat, StringSplit, TfIdfVectorizer,
LabelEncoder of ai.onnx.ml, Equal on strings, Cast to and from string) run here with
NumPy and Python's `str`/`re`; a result that is numbers (a mask, counts, codes) becomes an
ember tensor on the graph's device again.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

import ember
from ember.core.host import host_array
from ember.exporters.onnx_import_context import ImportContext, ember_dtype
from ember.exporters.onnx_registry import importer

__all__ = ["STRING", "is_strings", "host_strings", "to_strings", "from_strings"]

STRING = 8  # onnx.TensorProto.STRING
ML = "ai.onnx.ml"


def is_strings(value: Any) -> bool:
    """Whether `value` is a string value as the importer holds it (a NumPy array of
    `str`/`object`/`bytes`)."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "OUS"


def host_strings(value: Any, what: str = "a string value") -> np.ndarray:
    """`value` (a NumPy array or nested lists of `str` or `bytes`) as an `object` array of
    `str`; `TypeError` naming `what` if it holds no strings."""
    arr = np.asarray(value) if not isinstance(value, ember.Tensor) else None
    if arr is None or (arr.dtype.kind not in "OUS" and arr.size):
        got = f"a tensor of dtype {value.dtype}" if arr is None else f"dtype {arr.dtype}"
        raise TypeError(f"{what} holds ONNX strings: it must be a NumPy array of str, got "
                        f"{got}")
    out = np.empty(arr.shape, dtype=object)
    for i, s in np.ndenumerate(arr):
        if isinstance(s, bytes):
            s = s.decode("utf-8")
        if not isinstance(s, str):
            raise TypeError(f"{what} holds ONNX strings: it must hold only str, got "
                            f"{type(s).__name__}")
        out[i] = str(s)  # (NumPy hands out np.str_)
    return out


def _host(x: Any) -> np.ndarray:
    """The values of `x` (an ember tensor or a host value) as a NumPy array."""
    if isinstance(x, ember.Tensor):
        return host_array(x)
    return np.asarray(x)


def to_strings(x: Any) -> np.ndarray:
    """Cast to ONNX string: each number as NumPy writes it (as onnx's reference does)."""
    if is_strings(x):
        return host_strings(x)
    return host_strings(_host(x).astype(np.str_))


def from_strings(ctx: ImportContext, x: np.ndarray, to: int) -> Any:
    """Cast strings to the numbers of ONNX type `to` (a tensor on the graph's device)."""
    from ember.exporters.onnx_import_cast import cast

    held = ember_dtype(to, f"the target of {ctx.node.op_type} node {ctx.node.name!r}")
    try:
        if held == ember.bool:
            parse: Any = lambda s: s.strip().lower() in ("1", "true")  # noqa: E731
        else:
            parse = float if held.is_floating_point else int
        values = np.array([parse(s) for s in x.reshape(-1)],
                          dtype=bool if held == ember.bool else None).reshape(x.shape)
    except ValueError as err:
        raise ctx.fail(f"cannot cast the strings to numbers: {err}") from None
    return cast(ctx.tensor(values), to, bool(ctx.attr("saturate", 1)),
                f"the target of Cast node {ctx.node.name!r}")


def _tensor(ctx: ImportContext, values: np.ndarray) -> Any:
    return ctx.tensor(np.ascontiguousarray(values))


# -- StringNormalizer --------------------------------------------------------------------


@importer("StringNormalizer", since=10)
def _string_normalizer(ctx: ImportContext, x: np.ndarray) -> Any:
    x = host_strings(x, f"input of StringNormalizer node {ctx.node.name!r}")
    if not (x.ndim == 1 or (x.ndim == 2 and x.shape[0] == 1)):
        raise ctx.fail(f"the input must have shape [C] or [1, C], got {list(x.shape)}")
    action = ctx.attr("case_change_action", "NONE")
    change = {"NONE": lambda s: s, "LOWER": str.lower, "UPPER": str.upper}.get(action)
    if change is None:
        raise ctx.fail(f"unknown case_change_action {action!r} (LOWER, UPPER, NONE are)")
    sensitive = bool(ctx.attr("is_case_sensitive", 0))
    fold = (lambda s: s) if sensitive else str.lower
    stops = {fold(s) for s in ctx.attr("stopwords", [])}
    kept = [change(s) for s in x.reshape(-1) if fold(s) not in stops] or [""]
    out = np.empty(len(kept), dtype=object)
    out[:] = kept
    return out.reshape((1, -1) if x.ndim == 2 else (-1,))


# -- RegexFullMatch, StringConcat, StringSplit --------------------------------------------


@importer("RegexFullMatch", since=20)
def _regex_full_match(ctx: ImportContext, x: np.ndarray) -> Any:
    x = host_strings(x, f"input of RegexFullMatch node {ctx.node.name!r}")
    try:
        regex = re.compile(ctx.attr("pattern", ""))
    except re.error as err:
        raise ctx.fail(f"invalid pattern {ctx.attr('pattern')!r}: {err}") from None
    return _tensor(ctx, np.vectorize(lambda s: regex.fullmatch(s) is not None,
                                     otypes=[bool])(x).reshape(x.shape))


@importer("StringConcat", since=20)
def _string_concat(ctx: ImportContext, x: np.ndarray, y: np.ndarray) -> Any:
    what = f"input of StringConcat node {ctx.node.name!r}"
    a, b = np.broadcast_arrays(host_strings(x, what), host_strings(y, what))
    out = np.empty(a.shape, dtype=object)
    for i in np.ndindex(a.shape):
        out[i] = a[i] + b[i]
    return out


@importer("StringSplit", since=20)
def _string_split(ctx: ImportContext, x: np.ndarray) -> Any:
    x = host_strings(x, f"input of StringSplit node {ctx.node.name!r}")
    delimiter = ctx.attr("delimiter") or None  # none or "": runs of whitespace
    maxsplit = ctx.attr("maxsplit", -1)
    parts = [s.split(delimiter, maxsplit) for s in x.reshape(-1)]
    width = max((len(p) for p in parts), default=0)
    out = np.full((len(parts), width), "", dtype=object)
    for i, p in enumerate(parts):
        out[i, :len(p)] = p
    counts = np.array([len(p) for p in parts], dtype=np.int64).reshape(x.shape)
    return out.reshape(x.shape + (width,)), _tensor(ctx, counts)


# -- Equal, Cast, CastLike: their string forms -----------------------------------------


@importer("Equal", since=19)
def _equal(ctx: ImportContext, a: Any, b: Any) -> Any:
    if not (is_strings(a) or is_strings(b)):
        return ember.eq(a, b)
    what = f"input of Equal node {ctx.node.name!r}"
    return _tensor(ctx, np.asarray(host_strings(a, what) == host_strings(b, what),
                                   dtype=bool))


# -- TfIdfVectorizer -----------------------------------------------------------------------


def _ngrams(ctx: ImportContext) -> dict[tuple, int]:
    """The pool's n-grams of the sizes counted ([min_gram_length, max_gram_length]) ->
    their output column."""
    pool = ctx.attr("pool_strings") or [int(v) for v in ctx.attr("pool_int64s", [])]
    counts = list(ctx.attr("ngram_counts", [])) + [len(pool)]
    indexes = ctx.attr("ngram_indexes", [])
    lo, hi = ctx.attr("min_gram_length"), ctx.attr("max_gram_length")
    table: dict[tuple, int] = {}
    ngram_id = 0
    for size, (start, end) in enumerate(zip(counts, counts[1:]), start=1):
        for k in range(start, end - size + 1, size):
            if lo <= size <= hi:
                table[tuple(pool[k:k + size])] = indexes[ngram_id]
            ngram_id += 1
    return table


@importer("TfIdfVectorizer", since=9)
def _tfidf_vectorizer(ctx: ImportContext, x: Any) -> Any:
    values = host_strings(x) if is_strings(x) else _host(x).astype(np.int64)
    if values.ndim not in (1, 2) or (values.ndim == 2 and values.shape[0] < 1):
        raise ctx.fail(f"the input must have shape [C] or [B, C] with B > 0, got "
                       f"{list(values.shape)}")
    table = _ngrams(ctx)
    lo, hi = ctx.attr("min_gram_length"), ctx.attr("max_gram_length")
    width = max(ctx.attr("ngram_indexes", [0])) + 1
    rows = values.reshape(-1, values.shape[-1]).tolist()
    freq = np.zeros((len(rows), width), dtype=np.float32)
    for r, row in enumerate(rows):
        for skip in range(1, ctx.attr("max_skip_count", 0) + 2):
            first = lo if skip == 1 else max(lo, 2)  # unigrams count once, not per skip
            if first > hi:
                break
            for start in range(len(row)):
                for size in range(first, hi + 1):
                    last = start + (size - 1) * skip
                    if last >= len(row):
                        break
                    column = table.get(tuple(row[start:last + 1:skip]))
                    if column is not None:
                        freq[r, column] += 1
    mode = ctx.attr("mode")
    weights = np.asarray(ctx.attr("weights", []) or np.ones(width), dtype=np.float32)
    if mode == "IDF":
        freq = np.where(freq > 0, weights, 0).astype(np.float32)
    elif mode == "TFIDF":
        freq = freq * weights
    elif mode != "TF":
        raise ctx.fail(f"unknown mode {mode!r} (TF, IDF, TFIDF are)")
    return _tensor(ctx, freq.reshape(-1) if values.ndim == 1 else freq)


# -- LabelEncoder (ai.onnx.ml) -----------------------------------------------------------


def _key(v: Any) -> Any:
    """A dictionary key for a label: NaN keys match NaN labels."""
    return "\0nan" if isinstance(v, float) and math.isnan(v) else v


def _label_table(ctx: ImportContext) -> tuple[list, list, Any, np.dtype]:
    """Keys, values, the default value and the output's NumPy dtype (object: strings) of
    LabelEncoder 2 and later."""
    keys = next(ctx.attr(k) for k in ("keys_strings", "keys_int64s", "keys_floats",
                                      "keys_tensor") if ctx.attr(k) is not None)
    if "values_tensor" in ctx.attrs:
        dtype = ctx.attr("values_tensor").dtype
        values = ctx.attr("values_tensor").tolist()
        default = ctx.attr("default_tensor")
        default = default.reshape(-1).tolist()[0] if default is not None else \
            ("_Unused" if dtype.kind in "OUS" else -1 if dtype.kind in "iu" else -0.0)
    elif "values_strings" in ctx.attrs:
        values, dtype = ctx.attr("values_strings"), object
        default = ctx.attr("default_string", "_Unused")
    elif "values_int64s" in ctx.attrs:
        values, default, dtype = ctx.attr("values_int64s"), ctx.attr("default_int64", -1), \
            np.int64
    else:
        values, dtype = ctx.attr("values_floats", []), np.float32
        default = ctx.attr("default_float", -0.0)
    keys = keys.tolist() if isinstance(keys, np.ndarray) else keys
    return [_key(k) for k in keys], list(values), default, np.dtype(dtype)


@importer("LabelEncoder", since=1, domain=ML)
def _label_encoder(ctx: ImportContext, x: Any) -> Any:
    strings = is_strings(x)
    labels = host_strings(x) if strings else _host(x)
    if ctx.opset < 2:  # one list of strings: encoded as their index, or decoded from it
        classes = list(ctx.attr("classes_strings", []))
        index = list(range(len(classes)))
        keys, values, default, dtype = (
            (classes, index, ctx.attr("default_int64", -1), np.dtype(np.int64)) if strings
            else (index, classes, ctx.attr("default_string", "_Unused"), np.dtype(object)))
    else:
        keys, values, default, dtype = _label_table(ctx)
    lookup = dict(zip(keys, values))
    out = np.empty(labels.shape, dtype=object)
    for i, v in np.ndenumerate(labels):
        out[i] = lookup.get(_key(v.item() if isinstance(v, np.generic) else v), default)
    if dtype.kind in "OUS":
        return host_strings(out)
    return _tensor(ctx, out.astype(dtype))
