"""Prompt templates are experimenter input: every runaway template fails fast with a named
bound instead of hanging a function or exhausting its memory."""

from __future__ import annotations

import threading
import time

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


def test_a_loop_without_ranges_is_stopped_by_the_time_limit() -> None:
    source = "{% set s = 'x'*90000 %}{% for c in s %}{% for d in s %}{% endfor %}{% endfor %}"
    started = time.monotonic()
    with pytest.raises(sandbox.TemplateBoundsError, match=r"over 0\.3 s"):
        sandbox.render_bounded(lambda: _compile(source), {}, time_limit_s=0.3)
    assert (
        time.monotonic() - started < 15.0
    )  # generous: a loaded CI machine is slow, a runaway is far slower


def _timers() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if isinstance(t, threading.Timer) and t.is_alive()}


def test_no_interrupt_or_timer_outlives_a_render_in_time() -> None:
    before = _timers()
    for _ in range(50):
        sandbox.render_bounded(lambda: _compile("{{ x }}"), {"x": 1}, time_limit_s=0.05)
    time.sleep(0.2)  # a leaked interrupt would be raised here
    assert _timers() <= before


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
