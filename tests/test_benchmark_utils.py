"""ember.utils.benchmark (torch.utils.benchmark) against PyTorch's: Measurement's
statistics and printed form, Compare's table (trimmed, colored, highlighted, several
thread counts and envs), the unit helpers, and Timer's timeit / blocked_autorange /
adaptive_autorange arithmetic. Times differ by nature: forms and arithmetic are compared
on given times, timings only for their structure."""
from __future__ import annotations

import re

import numpy as np
import pytest

import ember
import ember.utils.benchmark as eb

torch = pytest.importorskip("torch")
tb = pytest.importorskip("torch.utils.benchmark")

RNG = np.random.default_rng(0)
TIMES = {n: list(RNG.lognormal(np.log(2e-4), s, n)) for n, s in ((1, 0.1), (3, 0.05),
                                                                  (7, 0.02), (20, 0.4))}


def _measurement(lib, raw, number=100, **spec):
    fields = dict(stmt="x + y", setup="pass", label="add", sub_label="4 floats",
                  description="cpu", num_threads=1)
    fields.update(spec)
    return lib.Measurement(number_per_run=number, raw_times=list(raw),
                           task_spec=lib.TaskSpec(**fields))


def _body(m) -> str:
    """A Measurement's printed form without the address line's object address."""
    first, rest = repr(m).split("\n", 1)
    return re.sub(r" at 0x[0-9a-f]+>", ">", first) + "\n" + rest


@pytest.mark.parametrize("n", sorted(TIMES))
def test_measurement_statistics_and_repr_match_torch(n):
    for spec in ({}, {"label": None, "sub_label": None, "description": None},
                 {"stmt": "y = x * 2\nz = y + 1", "label": None, "setup": "x = 1\ny = 2"},
                 {"num_threads": 4, "setup": "import math"}):
        e, t = _measurement(eb, TIMES[n], **spec), _measurement(tb, TIMES[n], **spec)
        for name in ("median", "mean", "iqr"):
            assert getattr(e, name) == pytest.approx(getattr(t, name), rel=1e-12), name
        assert e.times == pytest.approx(t.times, rel=1e-15)
        assert e.significant_figures == t.significant_figures
        assert e.has_warnings == t.has_warnings and e.title == t.title
        assert e.stmt == t.stmt and e.env == t.env and e.as_row_name == t.as_row_name
        assert _body(e) == _body(t).replace("<torch.", "<ember.")
    assert repr(e).startswith("<ember.utils.benchmark.utils.common.Measurement object at 0x")


def test_merge_matches_torch():
    def merged(lib):
        ms = [_measurement(lib, TIMES[7]), _measurement(lib, TIMES[3], number=10),
              _measurement(lib, TIMES[1], sub_label="other")]
        return [(m.number_per_run, m.times, m.sub_label) for m in lib.Measurement.merge(ms)]
    assert merged(eb) == merged(tb)


def _table(lib, *, trim=False, colorize=None, warnings=False):
    results = []
    for threads in (1, 4):
        for row, scale in (("small", 1.0), ("large", 37.0)):
            for col, shift in (("ember", 1.0), ("torch", 1.7)):
                raw = [t * scale * shift / threads for t in TIMES[20]]
                results.append(_measurement(lib, raw, sub_label=row, description=col,
                                            num_threads=threads))
    results.append(_measurement(lib, TIMES[7], label="other op", sub_label="x",
                                description="ember", env="A"))
    results.append(_measurement(lib, TIMES[3], label="other op", sub_label="x",
                                description="ember", env="B"))
    c = lib.Compare(results)
    if trim:
        c.trim_significant_figures()
    if colorize is not None:
        c.colorize(rowwise=colorize)
    if warnings:
        c.highlight_warnings()
    return str(c)


@pytest.mark.parametrize("options", [{}, {"trim": True}, {"colorize": False},
                                     {"colorize": True, "trim": True}, {"warnings": True}])
def test_compare_table_matches_torch(options, capsys):
    assert _table(eb, **options) == _table(tb, **options)
    eb.Compare([_measurement(eb, TIMES[3])]).print()
    assert capsys.readouterr().out == str(tb.Compare([_measurement(tb, TIMES[3])])) + "\n"


def test_compare_refuses_what_is_not_a_measurement():
    with pytest.raises(ValueError, match="Expected an instance of `Measurement`, got "
                                         "<class 'float'> instead."):
        eb.Compare([1.0])


def test_unit_helpers_match_torch():
    for t in (3e-10, 2.5e-8, 1e-6, 4.2e-5, 7e-3, 0.5, 12.0):
        assert eb.select_unit(t) == tb.select_unit(t)
    for x, n in ((3.14159, 2), (123.456, 1), (0.0123456, 3), (98765.4, 4)):
        assert eb.trim_sigfig(x, n) == pytest.approx(tb.trim_sigfig(x, n), rel=1e-6)
    assert [eb.unit_to_english(u) for u in ("ns", "us", "ms", "s")] == \
        [tb.unit_to_english(u) for u in ("ns", "us", "ms", "s")]
    assert eb.ordered_unique([3, 1, 3, 2, 1]) == tb.ordered_unique([3, 1, 3, 2, 1])


def test_timer_timeit_runs_the_statement_number_times():
    counter = {"n": 0}

    def bump():
        counter["n"] += 1
    timer = eb.Timer(stmt="bump()", globals={"bump": bump}, label="bump", description="d")
    m = timer.timeit(500)
    assert counter["n"] == 500 + 5  # a warm-up of number // 100 first
    assert m.number_per_run == 500 and len(m.raw_times) == 1
    assert m.times == [m.raw_times[0] / 500] and m.median == m.mean == m.times[0]
    assert m.iqr == 0.0 and m.title == "bump" and m.description == "d"
    assert re.fullmatch(r"<ember\.utils\.benchmark\.utils\.common\.Measurement object at "
                        r"0x[0-9a-f]+>\nbump\nd\n  \d+\.\d\d (ns|us|ms|s)\n"
                        r"  1 measurement, 500 runs , 1 thread", repr(m)), repr(m)


def test_blocked_and_adaptive_autorange():
    x = ember.ones(4)
    before = ember.get_num_threads()
    timer = eb.Timer(stmt="torch.add(x, x)", setup="y = 1", globals={"x": x},
                     num_threads=2 if before != 2 else 1)
    m = timer.blocked_autorange(min_run_time=0.02)
    assert sum(m.raw_times) >= 0.02 and m.number_per_run in (1, 10, 100, 1000, 10000, 100000)
    assert m.num_threads == (2 if before != 2 else 1) and m.task_spec.setup == "y = 1"
    assert m.median > 0 and m.times == [t / m.number_per_run for t in m.raw_times]
    seen = []
    a = timer.adaptive_autorange(threshold=0.5, max_run_time=0.1,
                                 callback=lambda n, t: seen.append(n))
    assert len(a.raw_times) == len(seen) and set(seen) == {a.number_per_run}
    assert len(a.raw_times) >= 4 or sum(a.raw_times) > 0.1
    assert ember.get_num_threads() == before  # the thread count is restored


def test_timer_errors_match_torch():
    for kwargs, kind in (({"stmt": lambda: 1}, ValueError),
                         ({"global_setup": "#include <x>"}, ValueError),
                         ({"language": "fortran"}, ValueError)):
        for lib in (eb, tb):
            with pytest.raises(kind) as info:
                lib.Timer(**kwargs)
        if kind is ValueError:
            with pytest.raises(kind) as mine:
                eb.Timer(**kwargs)
            assert str(mine.value) == str(info.value)
    with pytest.raises(NotImplementedError, match="See `Timer.blocked_autorange.`"):
        eb.Timer().repeat()
    with pytest.raises(NotImplementedError, match="C\\+\\+ statements"):
        eb.Timer("x", language="cpp")
    with pytest.raises(NameError):
        eb.Timer("undefined_name + 1").timeit(2)
    assert eb.Timer("torch.ones(2)").timeit(3).number_per_run == 3  # torch is in globals
