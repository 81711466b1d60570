"""Prompt templates are experimenter input: every runaway template fails fast with a named
bound instead of hanging a function or exhausting its memory."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator

import pytest

from shared.prompts import sandbox
from shared.prompts.templating import PromptTemplateError, _compile, render_template

RUNAWAY = {
    "huge range": ("{{ range(10**9)|list }}", "range() of 1,000,000,000 items"),
    "string product": ("{{ 'a'*10**7 }}", "10,000,000 items"),
    "nested ranges": (
        "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
        "loops drew over 100,000 items",
    ),
    "range over the limit": ("{% for i in range(100000) %}{% endfor %}", "range() of 100,000"),
    "padding filter": ("{{ 'a'|center(10**9) }}", "center: a width or count"),
    "padding method": ("{{ 'a'.ljust(10**9) }}", "ljust: a width or count"),
    "format width": ("{{ '{:>99999999}'.format(1) }}", "format width"),
    "percent width": ("{{ '%99999999d' % 1 }}", "format width"),
    "star width": ("{{ '%*d' % (10**9, 1) }}", "a width over 100,000"),
    "format filter star": ("{{ '%*d'|format(10**9, 1) }}", "a width over 100,000"),
    "doubling with ~": (
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
        "{% set ns.s = ns.s ~ ns.s %}{% endfor %}",
        "a joined string",
    ),
    "doubling with +": (
        "{% set ns = namespace(s='ab') %}{% for i in range(40) %}"
        "{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "131,072 items",
    ),
    "long join": ("{{ ('x'*100000).join(range(10000)|map('string')|list) }}", "1,000,000,000"),
    "output": ("{% for i in range(5000) %}{{ 'x'*100 }}{% endfor %}", "output over 200,000"),
    "recursion": ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "RecursionError"),
    "division": ("{{ 1/0 }}", "ZeroDivisionError"),
}


@pytest.mark.parametrize("name", RUNAWAY)
def test_runaway_templates_fail_fast_with_the_bound_named(name: str) -> None:
    source, message = RUNAWAY[name]
    started = time.monotonic()
    with pytest.raises(PromptTemplateError) as caught:
        render_template(source, {}, "prompt item 0 (TEXT)")
    assert (
        time.monotonic() - started < 15.0
    )  # generous: a loaded CI machine is slow, a runaway is far slower
    assert message in str(caught.value) and "prompt item 0 (TEXT)" in str(caught.value)


def test_a_loop_without_ranges_is_stopped_by_counted_steps() -> None:
    source = "{% set s = 'x'*90000 %}{% for c in s %}{% for d in s %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(sandbox.TemplateBoundsError, match=r"over 1,000,000 template steps"):
        sandbox.render_bounded(lambda: _compile(source), {})
    assert (
        time.monotonic() - started < 15.0
    )  # generous: a loaded CI machine is slow, a runaway is far slower


def test_values_built_across_a_render_are_bounded() -> None:
    source = "{% for i in range(1000) %}{% set s = 'x' * 90000 %}{% endfor %}"
    with pytest.raises(sandbox.TemplateBoundsError, match=r"add up to over 20,000,000"):
        sandbox.render_bounded(lambda: _compile(source), {})


class _SlowItems:
    """Variables on a slow (or busy) machine: each item takes 5 ms to produce."""

    def __iter__(self) -> Iterator[int]:
        for i in range(600):
            time.sleep(0.005)
            yield i


def test_a_slow_machine_renders_what_a_fast_one_renders() -> None:
    """Three seconds of rendering, which the wall-clock limit (2 s) refused: the same
    template on the same variables gives the same prompt on any machine."""
    source = "{% for i in items %}{{ i % 10 }}{% endfor %}"
    rendered = sandbox.render_bounded(lambda: _compile(source), {"items": _SlowItems()})
    assert rendered == "0123456789" * 60


def test_the_limit_is_the_same_count_wherever_it_is_reached() -> None:
    """A loop of N turns is refused at the same N, not after some seconds."""
    source = "{% for c in items %}{% endfor %}"
    for _ in range(3):  # a step a turn, and one to start: 401 for 400 turns
        sandbox.render_bounded(lambda: _compile(source), {"items": "x" * 400}, max_steps=401)
        with pytest.raises(sandbox.TemplateBoundsError, match="over 400 template steps"):
            sandbox.render_bounded(lambda: _compile(source), {"items": "x" * 400}, max_steps=400)


def test_the_tracer_of_the_caller_is_put_back() -> None:
    before = sys.gettrace()
    for _ in range(5):
        sandbox.render_bounded(lambda: _compile("{{ x }}"), {"x": 1})
    with pytest.raises(sandbox.TemplateBoundsError):
        sandbox.render_bounded(
            lambda: _compile("{% for c in s %}{% endfor %}"), {"s": "x" * 99}, 10
        )
    assert sys.gettrace() is before


def test_ordinary_templates_render_as_before() -> None:
    source = (
        "{{ range(3)|list }} {{ 'ab'*2 }} {{ '%03d'|format(7) }} {{ name|upper }} {{ 2**10 }} "
        "{% for i in range(3) %}{{ i }}{% endfor %} {{ big }} {{ 'a' ~ 'b' }} "
        "{{ words|join(', ') }} {{ range(10)[2] }} {{ range(10)[8:]|list }} {{ 3 in range(5) }} "
        "{{ range(3)|reverse|list }} {{ range(4)|length }}"
    )
    variables = {"name": "ana", "big": 1_234_567, "words": ["x", "y"]}
    assert render_template(source, variables, "t") == (
        "[0, 1, 2] abab 007 ANA 1024 012 1234567 ab x, y 2 [8, 9] True [2, 1, 0] 4"
    )
