"""A Jinja sandbox with bounds: templates are experimenter input and must not hang or exhaust a
function instance.

Jinja's own sandbox only refuses unsafe attributes; it lets ``{{ range(10**9)|list }}`` raise a
bare OverflowError, ``{{ 'a'*10**7 }}`` build a 10 MB prompt and nested loops pin a CPU forever.
Here every render is bounded in:

- size: ranges, strings and lists built by operators, calls and filters, and the output;
- work: items drawn from ranges across one render, template lines executed (every loop's
  turn counts) and characters or items built, all counted, never timed: the same template on
  the same variables renders, or is refused at the same point, on any machine, however busy.

Each refusal is a TemplateBoundsError naming the bound, which templating turns into a
PromptTemplateError (an error record naming the document and field).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import operator
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from types import CodeType, FrameType
from typing import Any

from jinja2 import Template, nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.sandbox import SandboxedEnvironment

from shared.errors import BadInput

MAX_RANGE = 10_000
"""Items in one ``range()``."""
MAX_ITERATIONS = 100_000
"""Items drawn from all ranges of one render (nested loops multiply)."""
MAX_SIZE = 100_000
"""Characters or items of one value built by the template (``*``, ``+``, ``%``, calls, filters)."""
MAX_OUTPUT = 200_000
"""Characters of one rendered template; a prompt is far smaller."""
MAX_STEPS = 1_000_000
"""Template lines executed in one render (each turn of a loop at least one); a prompt takes
hundreds. About a second of work on a laptop: what bounds a loop over the variables."""
MAX_BUILT = 20_000_000
"""Characters or items of all values built in one render (each at most MAX_SIZE): the work of
the operators, calls and filters inside those steps."""

_WIDE_FORMAT = re.compile(r"\d{6,}")
"""A width or precision of a million or more in a format string."""


class TemplateBoundsError(BadInput):
    """A template went over one of the bounds above; the message names it."""


@dataclasses.dataclass
class _Budget:
    iterations: int = 0
    steps: int = 0
    built: int = 0
    max_steps: int = MAX_STEPS


_budget: contextvars.ContextVar[_Budget | None] = contextvars.ContextVar("budget", default=None)


def _check_size(size: int, what: str = "a value") -> None:
    if size > MAX_SIZE:
        raise TemplateBoundsError(f"{what} of {size:,} items (the limit is {MAX_SIZE:,})")


def _sized(value: Any) -> Any:
    """``value``, refused if it is a string or collection over MAX_SIZE, or if the values built
    in this render add up to over MAX_BUILT."""
    if isinstance(value, str | bytes | list | tuple | dict | set):
        _built(len(value))
    return value


def _built(size: int, what: str = "a value") -> None:
    _check_size(size, what)
    budget = _budget.get()
    if budget is not None:
        budget.built += size
        if budget.built > MAX_BUILT:
            raise TemplateBoundsError(
                f"values built in one render add up to over {MAX_BUILT:,} items"
            )


_WIDTHS = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "indent", "wordwrap", "truncate"}
    | {"batch", "slice"}
)
"""Methods and filters whose numeric arguments size their result."""


def _big_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_SIZE


def _precheck(name: str, subject: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Refuse, before C code allocates it, a result that would be over MAX_SIZE: widths and
    counts, replacements and joins that multiply, format strings with huge widths."""
    if name in _WIDTHS and any(_big_count(a) for a in (*args, *kwargs.values())):
        raise TemplateBoundsError(f"{name}: a width or count over {MAX_SIZE:,}")
    if name == "join":
        _check_join(subject, args, kwargs)
    if not isinstance(subject, str):
        return
    if name in ("format", "format_map"):
        _check_format(subject, (*args, *kwargs.values()))
    if name == "replace" and len(args) >= 2 and isinstance(args[0], str):
        _check_size(len(subject) + (subject.count(args[0]) + 1) * len(str(args[1])))


def _check_format(fmt: str, args: tuple[Any, ...]) -> None:
    """``fmt.format(...)``, ``fmt % args`` or ``fmt|format(...)``: no huge widths, written in
    the format or passed for a ``*``."""
    if _WIDE_FORMAT.search(fmt):
        raise TemplateBoundsError("a format width of a million or more")
    if "*" in fmt and any(_big_count(a) for a in args):
        raise TemplateBoundsError(f"string formatting: a width over {MAX_SIZE:,}")


def _check_join(subject: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """``sep.join(items)`` or ``items|join(sep)``: the separator repeats once per item."""
    if isinstance(subject, str):
        sep, items = subject, args[0] if args else ()
    else:
        sep, items = (args[0] if args else kwargs.get("d", "")), subject
    if isinstance(sep, str) and hasattr(items, "__len__"):
        _check_size(len(sep) * len(items))


class _CountedRange:
    """A range whose items count against the render's iteration budget."""

    def __init__(self, items: range) -> None:
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int | slice) -> Any:
        item = self.items[index]
        return _CountedRange(item) if isinstance(item, range) else item

    def __contains__(self, value: object) -> bool:
        return value in self.items

    def __reversed__(self) -> Iterator[int]:
        return iter(_CountedRange(self.items[::-1]))

    def __repr__(self) -> str:
        return repr(self.items)

    def __iter__(self) -> Iterator[int]:
        budget = _budget.get() or _Budget()
        for item in self.items:
            budget.iterations += 1
            if budget.iterations > MAX_ITERATIONS:
                raise TemplateBoundsError(
                    f"loops drew over {MAX_ITERATIONS:,} items from range() in one render"
                )
            yield item


def _range(*args: int) -> _CountedRange:
    items = range(*args)
    size = (items.stop - items.start) // items.step  # len() overflows past sys.maxsize
    if size > MAX_RANGE:
        raise TemplateBoundsError(f"range() of {size:,} items (the limit is {MAX_RANGE:,})")
    return _CountedRange(items)


def _product(left: Any, right: Any) -> Any:
    for seq, count in ((left, right), (right, left)):
        if isinstance(count, int) and isinstance(seq, str | bytes | list | tuple):
            _check_size(len(seq) * max(0, count))  # refused before it is built
    return operator.mul(left, right)


def _power(left: Any, right: Any) -> Any:
    numbers = isinstance(left, int) and isinstance(right, int) and right > 0
    if numbers and left.bit_length() * right > MAX_SIZE * 8:
        raise TemplateBoundsError(f"a number of over {MAX_SIZE * 8:,} bits")
    return operator.pow(left, right)


def _modulo(left: Any, right: Any) -> Any:
    if isinstance(left, str):
        _check_format(left, right if isinstance(right, tuple) else (right,))
    return operator.mod(left, right)


def _concat(left: Any, right: Any) -> Any:
    if isinstance(left, str | list | tuple) and isinstance(right, str | list | tuple):
        _check_size(len(left) + len(right))
    return operator.add(left, right)


_BINOPS: dict[str, Callable[[Any, Any], Any]] = {
    "*": _product,
    "**": _power,
    "%": _modulo,
    "+": _concat,
}


def _bounded_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """The filter with its arguments prechecked and its result's size checked."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) else 0  # context/environment first

    @functools.wraps(func)  # keeps jinja's pass_context/pass_environment marks
    def bounded(*args: Any, **kwargs: Any) -> Any:
        value, rest = (args[skip], args[skip + 1 :]) if len(args) > skip else (None, ())
        _precheck(name, value, rest, kwargs)
        return _sized(func(*args, **kwargs))

    return bounded


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a size-checked join: Jinja's sandbox cannot intercept ``~``, and a
    loop doubling a string with it would exhaust memory before the time limit."""

    @optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class BoundedEnvironment(SandboxedEnvironment):
    """SandboxedEnvironment with size and work bounds (see the module docstring)."""

    intercepted_binops = frozenset(_BINOPS)
    code_generator_class = _BoundedCodeGenerator

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.globals["range"] = _range
        self.globals.pop("lipsum", None)  # builds text of any length; no prompt needs it
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        return _sized(_BINOPS[operator](left, right))

    def bounded_concat(self, values: tuple[Any, ...]) -> str:
        parts = [str(v) for v in values]
        _built(sum(len(p) for p in parts), "a joined string")
        return "".join(parts)

    def call(self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        name = getattr(__obj, "__name__", "")
        method = getattr(__obj, "__wrapped__", __obj)  # the sandbox wraps str.format
        _precheck(name, getattr(method, "__self__", None), args, kwargs)
        return _sized(super().call(__context, __obj, *args, **kwargs))


def _template_frame(frame: FrameType) -> bool:
    """A frame of a compiled template (its module's globals hold its environment)."""
    return isinstance(frame.f_globals.get("environment"), BoundedEnvironment)


def _step(*_: Any) -> None:
    """One step of template code in the current render (a call or a jump: each loop turn)."""
    budget = _budget.get()
    if budget is not None:
        budget.steps += 1
        if budget.steps > budget.max_steps:
            raise TemplateBoundsError(f"over {budget.max_steps:,} template steps in one render")


def _monitoring_tool() -> int | None:
    """A sys.monitoring tool id for the sandbox (Python 3.12+), or None when all are taken:
    then a line tracer counts the steps instead."""
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is None:
        return None
    for tool in (4, 3):
        if monitoring.get_tool(tool) is None:
            monitoring.use_tool_id(tool, "dlab template sandbox")
            events = monitoring.events
            monitoring.register_callback(tool, events.JUMP, _step)
            monitoring.register_callback(tool, events.PY_START, _step)
            return tool
    return None


_TOOL = _monitoring_tool()
_counted_code: set[CodeType] = set()
"""The compiled templates' code whose calls and jumps are counted (events are set per code
object, so no other code pays for them)."""


def _count_steps_of(template: Template) -> None:
    if _TOOL is None:
        return
    found = [template.root_render_func.__code__]
    found += [block.__code__ for block in template.blocks.values()]
    events = sys.monitoring.events.JUMP | sys.monitoring.events.PY_START
    while found:
        code = found.pop()
        if code in _counted_code:
            continue
        sys.monitoring.set_local_events(_TOOL, code, events)
        _counted_code.add(code)
        found += [c for c in code.co_consts if isinstance(c, CodeType)]  # macros, loop bodies


@contextlib.contextmanager
def _counted_steps(template: Template) -> Iterator[None]:
    """Count the steps the current render takes in template code: through sys.monitoring on
    the template's code objects, else with a line tracer on its frames (the previous tracer,
    a coverage tool's, put back after)."""
    _count_steps_of(template)
    if _TOOL is not None:
        yield
        return

    def step(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line":
            _step()
        return step

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        return step if event == "call" and _template_frame(frame) else None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        yield
    finally:
        sys.settrace(previous)


def render_bounded(
    compile_template: Callable[[], Template],
    variables: Mapping[str, Any],
    max_steps: int = MAX_STEPS,
) -> str:
    """Compile (Jinja folds constants then) and render a BoundedEnvironment template within the
    bounds; TemplateBoundsError names the bound it went over."""
    token = _budget.set(_Budget(max_steps=max_steps))
    try:
        template = compile_template()
        with _counted_steps(template):
            return _collect(template.generate(variables))
    finally:
        _budget.reset(token)


def _collect(chunks: Iterator[str]) -> str:
    out: list[str] = []
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > MAX_OUTPUT:
            raise TemplateBoundsError(f"output over {MAX_OUTPUT:,} characters")
        out.append(chunk)
    return "".join(out)
