"""String values in ember.onnx.load: held as NumPy `object` arrays on the host (ember has
no string dtype), with the string ops run there. Hand-built graphs are checked against
onnx's ReferenceEvaluator; ONNX's own string node cases and "simple" models run in
test_onnx_backend.py."""

from __future__ import annotations

import numpy as np
import pytest

import ember

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

STR, F32, I64 = TensorProto.STRING, TensorProto.FLOAT, TensorProto.INT64
ML = "ai.onnx.ml"


def _model(nodes, inputs, outputs, initializers=(), opset=20, ml=None):
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    opsets = [helper.make_opsetid("", opset)]
    if ml is not None:
        opsets.append(helper.make_opsetid(ML, ml))
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _check(model, *inputs):
    """Run with ember and with onnx's reference: same values; strings come back as NumPy
    object arrays, numbers as ember tensors."""
    names = [i.name for i in model.graph.input]
    want = ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))
    out = ember.onnx.load(model)(*inputs)
    got = out if isinstance(out, tuple) else (out,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w.dtype.kind in "OU":
            assert isinstance(g, np.ndarray) and g.dtype == object
            assert g.shape == w.shape and g.tolist() == w.tolist()
        else:
            assert isinstance(g, ember.Tensor)
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-6)
            assert g.numpy().dtype == w.dtype
    return got


WORDS = np.array(["Monday", "tuesday", "the", "Wednesday", "THE", "a"], dtype=object)


def test_a_string_pipeline_matches_the_reference():
    nodes = [
        helper.make_node("StringNormalizer", ["x"], ["norm"], case_change_action="LOWER",
                         is_case_sensitive=0, stopwords=["the", "a"]),
        helper.make_node("Constant", [], ["bang"], value_string="!"),
        helper.make_node("StringConcat", ["x", "bang"], ["loud"]),
        helper.make_node("RegexFullMatch", ["loud"], ["day"], pattern=r"[A-Za-z]+day!"),
        helper.make_node("Equal", ["x", "vocab"], ["same"]),
        helper.make_node("StringSplit", ["x"], ["parts", "counts"], delimiter="e"),
    ]
    vocab = numpy_helper.from_array(np.array(["Monday", "x", "the", "y", "z", "a"],
                                             dtype=object), "vocab")
    model = _model(nodes, [_vi("x", STR, [6])],
                   [_vi("norm", STR, ["n"]), _vi("loud", STR, [6]),
                    _vi("day", TensorProto.BOOL, [6]), _vi("same", TensorProto.BOOL, [6]),
                    _vi("parts", STR, [6, "m"]), _vi("counts", I64, [6])], [vocab])
    norm, loud, day, same, *_ = _check(model, WORDS)
    assert norm.tolist() == ["monday", "tuesday", "wednesday"]
    assert day.tolist() == [True, True, False, True, False, False]


@pytest.mark.parametrize("mode", ["TF", "IDF", "TFIDF"])
@pytest.mark.parametrize("strings", [False, True])
def test_tfidf_vectorizer_matches_the_reference(mode, strings):
    rng = np.random.default_rng(0)
    ints = rng.integers(0, 5, size=(3, 12))
    pool = [0, 1, 2, 3, 0, 1, 1, 2, 2, 2, 4, 3]  # 4 unigrams, 4 bigrams
    x, kw = ints.astype(np.int64), {"pool_int64s": pool}
    if strings:
        x = np.array([[f"w{v}" for v in row] for row in ints], dtype=object)
        kw = {"pool_strings": [f"w{v}" for v in pool]}
    node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], mode=mode, min_gram_length=1,
                            max_gram_length=2, max_skip_count=2, ngram_counts=[0, 4],
                            ngram_indexes=[7, 6, 5, 4, 3, 2, 1, 0],
                            weights=[0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4], **kw)
    model = _model([node], [_vi("x", STR if strings else I64, [3, 12])],
                   [_vi("y", F32, [3, 8])], opset=17)
    (y,) = _check(model, x)
    assert y.abs().sum().item() > 0  # some n-grams are counted


def test_label_encoders_both_directions_and_tensor_mappings():
    # LabelEncoder 1 (the reference has only 2 and later): the input's type picks the
    # direction, index <-> classes_strings; values from its spec
    decode = helper.make_node("LabelEncoder", ["codes"], ["names"], domain=ML,
                              classes_strings=["a", "b", "c"], default_string="?")
    model = _model([decode], [_vi("codes", I64, [4])], [_vi("names", STR, [4])], opset=17,
                   ml=1)
    names = ember.onnx.load(model)(np.array([2, 0, 7, 1], dtype=np.int64))
    assert names.dtype == object and names.tolist() == ["c", "a", "?", "b"]
    encode = helper.make_node("LabelEncoder", ["names"], ["codes"], domain=ML,
                              classes_strings=["a", "b", "c"], default_int64=-9)
    model = _model([encode], [_vi("names", STR, [4])], [_vi("codes", I64, [4])], opset=17,
                   ml=1)
    codes = ember.onnx.load(model)(np.array(["c", "zz", "a", "b"], dtype=object))
    assert codes.dtype == ember.int64 and codes.tolist() == [2, -9, 0, 1]
    strings = helper.make_node("LabelEncoder", ["names"], ["y"], domain=ML,
                               keys_strings=["a", "b"], values_floats=[0.5, 1.5])
    model = _model([strings], [_vi("names", STR, [3])], [_vi("y", F32, [3])], opset=17,
                   ml=2)
    _check(model, np.array(["b", "q", "a"], dtype=object))
    floats = helper.make_node(
        "LabelEncoder", ["x"], ["y"], domain=ML,
        keys_tensor=numpy_helper.from_array(np.array([1.5, np.nan], np.float32)),
        values_tensor=numpy_helper.from_array(np.array(["one", "nan"], dtype=object)),
        default_tensor=numpy_helper.from_array(np.array(["other"], dtype=object)))
    model = _model([floats], [_vi("x", F32, [3])], [_vi("y", STR, [3])], opset=17, ml=4)
    # the spec: a NaN key matches any NaN (onnx's reference misses it: checked by hand)
    y = ember.onnx.load(model)(np.array([np.nan, 1.5, 2.0], np.float32))
    assert y.dtype == object and y.tolist() == ["nan", "one", "other"]


def test_cast_to_and_from_strings():
    nodes = [helper.make_node("Cast", ["x"], ["s"], to=STR),
             helper.make_node("Cast", ["s"], ["back"], to=F32),
             helper.make_node("CastLike", ["words", "x"], ["parsed"])]
    model = _model(nodes, [_vi("x", F32, [3]), _vi("words", STR, [3])],
                   [_vi("s", STR, [3]), _vi("back", F32, [3]), _vi("parsed", F32, [3])])
    s, _, parsed = _check(model, np.array([1.5, -2.0, 0.25], np.float32),
                          np.array(["3.5", "-inf", "7"], dtype=object))
    assert s.tolist() == ["1.5", "-2.0", "0.25"]
    assert parsed.tolist() == [3.5, float("-inf"), 7.0]


def test_a_string_input_needs_strings_and_the_right_shape():
    node = helper.make_node("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")
    loaded = ember.onnx.load(_model([node], [_vi("x", STR, [2])], [_vi("y", STR, ["n"])],
                                    opset=17))
    assert loaded(np.array(["ab", "cd"])).tolist() == ["AB", "CD"]  # "<U2" is accepted
    with pytest.raises(TypeError, match=r"input 'x' of the ONNX model holds ONNX strings: "
                                        r"it must be a NumPy array of str, got a tensor of "
                                        r"dtype ember.float32"):
        loaded(ember.ones(2))
    with pytest.raises(ValueError, match=r"input 'x' of the ONNX model must have shape \[2\]"):
        loaded(np.array(["a", "b", "c"]))


def test_bad_string_op_arguments_name_the_node():
    node = helper.make_node("StringNormalizer", ["x"], ["y"], name="norm")
    loaded = ember.onnx.load(_model([node], [_vi("x", STR, [2, 2])], [_vi("y", STR, ["n"])],
                                    opset=17))
    with pytest.raises(ValueError, match=r"ONNX StringNormalizer node 'norm': the input "
                                         r"must have shape \[C\] or \[1, C\], got \[2, 2\]"):
        loaded(np.array([["a", "b"], ["c", "d"]]))
    node = helper.make_node("RegexFullMatch", ["x"], ["y"], name="re", pattern="(a")
    loaded = ember.onnx.load(_model([node], [_vi("x", STR, [1])],
                                    [_vi("y", TensorProto.BOOL, [1])]))
    with pytest.raises(ValueError, match=r"ONNX RegexFullMatch node 're': invalid pattern"):
        loaded(np.array(["a"]))
    node = helper.make_node("Cast", ["x"], ["y"], name="num", to=F32)
    loaded = ember.onnx.load(_model([node], [_vi("x", STR, [2])], [_vi("y", F32, [2])]))
    with pytest.raises(ValueError, match=r"ONNX Cast node 'num': cannot cast the strings to "
                                         r"numbers: could not convert string to float: 'x1'"):
        loaded(np.array(["1.5", "x1"]))


def test_cli_onnx_run_takes_and_saves_string_arrays(tmp_path, monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    from ember.cli import main

    nodes = [helper.make_node("StringConcat", ["x", "x"], ["y"]),
             helper.make_node("RegexFullMatch", ["x"], ["m"], pattern="t.*")]
    onnx.save(_model(nodes, [_vi("x", STR, [3])], [_vi("y", STR, [3]),
                                                   _vi("m", TensorProto.BOOL, [3])]),
              str(tmp_path / "s.onnx"))
    np.save(tmp_path / "x.npy", np.array(["tea", "cup", "toast"]))  # a str array: no pickle
    monkeypatch.chdir(tmp_path)
    assert main(["onnx", "run", "s.onnx", "--input", "x=x.npy", "--check", "--save", "out"]) == 0
    out = capsys.readouterr().out
    assert "y: <U10[3]" in out and "y: strings equal (ok)" in out
    assert "m: largest difference 0 (ok:" in out
    assert np.load(tmp_path / "out" / "y.npy").tolist() == ["teatea", "cupcup", "toasttoast"]
