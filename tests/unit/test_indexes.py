"""Every query the functions make has a composite index in firestore.indexes.json.

The emulator serves any query without an index; production rejects a multi-field query that has
none (FAILED_PRECONDITION), which would only show after deployment. So the queries are found in
the source with ast: chains of ``.where(...)`` / ``.order_by(...)`` on a collection, the
collection resolved through helper functions and shared/paths.py patterns, field names passed as
``**kwargs`` resolved at every call site. A query the scanner cannot resolve fails the test: write
it with literal field names, or teach the scanner.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from functions import journal
from functions.journal import RecordedCall

ROOT = Path(__file__).resolve().parents[2]
INDEXES = ROOT / "firestore.indexes.json"
SCANNED = ("functions", "shared")
QUERY_METHODS = {"where", "order_by"}
EQUALITY_OPS = {"==", "in", "array_contains", "array-contains", "array_contains_any"}
EQUALITY_OPS |= {"array-contains-any"}


FIND = "functions.store.find"
"""The functions' one generic query: ``store.find(collection, (field, op, value))``."""


class Unresolved(Exception):
    """The scanner cannot tell a query's collection or fields from the source."""


@dataclasses.dataclass(frozen=True)
class Query:
    site: str
    collection: str
    group: bool
    filters: tuple[tuple[str, str], ...]
    """(field, op)"""
    orders: tuple[tuple[str, str], ...]
    """(field, ASCENDING | DESCENDING)"""

    @property
    def fields(self) -> set[str]:
        return {f for f, _ in self.filters} | {f for f, _ in self.orders}

    @property
    def indexed_fields(self) -> set[str]:
        """The fields an index is kept for: document names are ordered within every index."""
        return self.fields - {"__name__"}


@dataclasses.dataclass(frozen=True)
class _Disjunction:
    """An ``Or`` filter: one query per alternative (each served by an index of its own)."""

    alternatives: tuple[tuple[tuple[str, str], ...], ...]


@dataclasses.dataclass(frozen=True)
class _Dynamic:
    """A field name that is a key of the enclosing function's ``**kwargs``."""

    function: str


@dataclasses.dataclass
class _Module:
    name: str
    tree: ast.Module
    constants: dict[str, ast.expr]
    imports: dict[str, str]
    """local name -> dotted target (a module, or a module's attribute)"""


@dataclasses.dataclass(frozen=True)
class _Ctx:
    module: _Module
    function: ast.FunctionDef | ast.AsyncFunctionDef | None
    """None at module level."""


# --- scanning ---------------------------------------------------------------------------------


class Scanner:
    def __init__(self, sources: dict[str, str]) -> None:
        """``sources``: module name (``functions.store``) to source text."""
        self.modules = [self._module(name, text) for name, text in sources.items()]
        self.functions: dict[str, list[_Ctx]] = {}
        for module in self.modules:
            for node in ast.walk(module.tree):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.functions.setdefault(node.name, []).append(_Ctx(module, node))

    @staticmethod
    def _module(name: str, text: str) -> _Module:
        tree = ast.parse(text)
        constants = {
            node.targets[0].id: node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
        }
        imports: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = name.rsplit(".", node.level)[0]
                    base = f"{package}.{base}" if base else package
                for alias in node.names:
                    imports[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    local = alias.asname or alias.name.split(".")[0]
                    imports[local] = alias.name if alias.asname else local
        return _Module(name, tree, constants, imports)

    def queries(self) -> Iterator[Query]:
        for ctxs in self.functions.values():
            for ctx in ctxs:
                if f"{ctx.module.name}.{getattr(ctx.function, 'name', '')}" == FIND:
                    continue  # its query's field is its caller's: each call is a query
                for chain in self._outermost_chains(ctx):
                    yield from self._queries_of(chain, ctx)
                yield from self._finds(ctx)

    def _finds(self, ctx: _Ctx) -> Iterator[Query]:
        """``store.find(collection, (field, op, value), ...)``: a query on one field, which
        its call names as a literal (a query without ``where`` needs no index)."""
        assert ctx.function is not None
        for node in ast.walk(ctx.function):
            if not (isinstance(node, ast.Call) and self._names_find(node.func, ctx)):
                continue
            site = f"{ctx.module.name}:{node.lineno}"
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            where = node.args[1] if len(node.args) > 1 else keywords.get("where")
            if where is None:
                continue
            if not (isinstance(where, ast.Tuple) and len(where.elts) == 3):
                raise Unresolved(f"{site}: store.find's where is not a (field, op, value)")
            try:
                field, op = self._string(where.elts[0], ctx), self._string(where.elts[1], ctx)
            except Unresolved as why:
                raise Unresolved(f"{site}: {why}") from None
            try:
                collection = _last_segment(self._path(node.args[0], ctx))
            except Unresolved:
                collection = "?"  # one field: served by its automatic index, wherever it is
            yield Query(site, collection, False, ((field, op),), ())

    @staticmethod
    def _names_find(func: ast.expr, ctx: _Ctx) -> bool:
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return f"{ctx.module.imports.get(func.value.id)}.{func.attr}" == FIND
        return isinstance(func, ast.Name) and ctx.module.imports.get(func.id) == FIND

    # chains --------------------------------------------------------------------------------

    @staticmethod
    def _is_query_call(node: ast.AST) -> bool:
        return (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in QUERY_METHODS
        )

    def _outermost_chains(self, ctx: _Ctx) -> list[ast.Call]:
        assert ctx.function is not None
        calls = [n for n in ast.walk(ctx.function) if self._is_query_call(n)]
        inner = {id(c.func.value) for c in calls}  # type: ignore[attr-defined]
        chains = [c for c in calls if id(c) not in inner]
        # A chain assigned to a variable that another chain extends is not a query of its own.
        extended = {self._root_name(c) for c in chains} - {None}
        assigned = self._assigned_chains(ctx)
        return [
            c
            for c in chains
            if not any(
                name in extended and any(o is not c and self._root_name(o) == name for o in chains)
                for name in assigned.get(id(c), ())
            )
        ]

    def _assigned_chains(self, ctx: _Ctx) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        assert ctx.function is not None
        for node in ast.walk(ctx.function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    out.setdefault(id(node.value), []).append(target.id)
        return out

    def _root_name(self, chain: ast.expr) -> str | None:
        node = chain
        while self._is_query_call(node):
            node = node.func.value  # type: ignore[attr-defined]
        return node.id if isinstance(node, ast.Name) else None

    @staticmethod
    def _locals(ctx: _Ctx, name: str) -> list[ast.expr]:
        values: list[ast.expr] = []
        if ctx.function is None:
            return values
        for node in ast.walk(ctx.function):
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name) and target.id == name:
                    values.append(node.value)
            elif (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and node.target.id == name
                and node.value is not None
            ):
                values.append(node.value)
        return values

    def _queries_of(self, chain: ast.Call, ctx: _Ctx) -> Iterator[Query]:
        site = f"{ctx.module.name}:{chain.lineno}"
        try:
            filters, orders, base = self._collect(chain, ctx, seen=set())
            static = [(f, op) for f, op in filters if isinstance(f, str)]
            dynamic = {(f.function, op) for f, op in filters if isinstance(f, _Dynamic)}
            ors = [f for f, _ in filters if isinstance(f, _Disjunction)]
            if len(dynamic) > 1 or len(ors) > 1 or (dynamic and ors):
                raise Unresolved("more than one **kwargs or Or filter")
            shapes = [(site, static)]
            if ors:
                shapes = [
                    (f"{site} (or {i})", static + list(alt))
                    for i, alt in enumerate(ors[0].alternatives)
                ]
            if dynamic:
                ((function, op),) = dynamic
                shapes = [
                    (f"{site} via {call_site}", static + [(key, op) for key in keys])
                    for call_site, keys in self._kwargs_at_call_sites(function)
                ]
            # The collection only matters for queries that need a composite index.
            try:
                collection, group = self._collection(base, ctx)
            except Unresolved:
                if any(len({f for f, _ in fs} | {f for f, _ in orders}) > 1 for _, fs in shapes):
                    raise
                collection, group = "?", False
        except Unresolved as why:
            raise Unresolved(f"{site}: {why}") from None
        for where, fs in shapes:
            yield Query(where, collection, group, tuple(fs), tuple(orders))

    def _collect(
        self, chain: ast.expr, ctx: _Ctx, seen: set[int]
    ) -> tuple[list[tuple[str | _Dynamic | _Disjunction, str]], list[tuple[str, str]], ast.expr]:
        """Filters and orders of a chain (following variables it starts from), and its base."""
        filters: list[tuple[str | _Dynamic | _Disjunction, str]] = []
        orders: list[tuple[str, str]] = []
        seen.add(id(chain))
        node = chain
        while self._is_query_call(node):
            call: ast.Call = node  # type: ignore[assignment]
            if call.func.attr == "where":  # type: ignore[attr-defined]
                filters.insert(0, self._filter(call, ctx))
            else:
                orders.insert(0, self._order(call, ctx))
            node = call.func.value  # type: ignore[attr-defined]
        if isinstance(node, ast.Name):
            values = [v for v in self._locals(ctx, node.id) if id(v) not in seen]
            if len(values) == 1:
                value = values[0]
                if self._is_query_call(value):
                    more_f, more_o, base = self._collect(value, ctx, seen)
                    return more_f + filters, more_o + orders, base
                return filters, orders, value
            if len(values) > 1:
                raise Unresolved(f"{node.id} is assigned {len(values)} times")
        return filters, orders, node

    def _filter(self, call: ast.Call, ctx: _Ctx) -> tuple[str | _Dynamic | _Disjunction, str]:
        kwargs = {k.arg: k.value for k in call.keywords if k.arg}
        if "filter" in kwargs:
            inner = kwargs["filter"]
            if isinstance(inner, ast.Call) and _name_of(inner.func) == "Or":
                return self._disjunction(inner, ctx), "or"
            if not (isinstance(inner, ast.Call) and _name_of(inner.func) == "FieldFilter"):
                raise Unresolved("only FieldFilter, Or and And filters are understood")
            field_node, op_node = inner.args[0], inner.args[1]
        elif len(call.args) >= 2:
            field_node, op_node = call.args[0], call.args[1]
        elif "field_path" in kwargs and "op_string" in kwargs:
            field_node, op_node = kwargs["field_path"], kwargs["op_string"]
        else:
            raise Unresolved("where() without a field and an operator")
        op = self._string(op_node, ctx)
        if isinstance(field_node, ast.Name) and (fn := self._kwargs_loop(field_node.id, ctx)):
            return _Dynamic(fn), op
        return self._string(field_node, ctx), op

    def _disjunction(self, call: ast.Call, ctx: _Ctx) -> _Disjunction:
        """``Or([FieldFilter(...) | And([FieldFilter(...), ...]), ...])`` with literal lists."""
        if not (call.args and isinstance(call.args[0], ast.List)):
            raise Unresolved("Or() without a literal list of filters")
        return _Disjunction(tuple(self._conjunction(node, ctx) for node in call.args[0].elts))

    def _conjunction(self, node: ast.expr, ctx: _Ctx) -> tuple[tuple[str, str], ...]:
        if isinstance(node, ast.Name):  # a filter built first, in a variable assigned once
            values = self._locals(ctx, node.id)
            if len(values) != 1:
                raise Unresolved(f"{node.id} is assigned {len(values)} times")
            node = values[0]
        if isinstance(node, ast.Call) and _name_of(node.func) == "And":
            if not (node.args and isinstance(node.args[0], ast.List)):
                raise Unresolved("And() without a literal list of filters")
            return tuple(f for elt in node.args[0].elts for f in self._conjunction(elt, ctx))
        if isinstance(node, ast.Call) and _name_of(node.func) == "FieldFilter":
            return ((self._string(node.args[0], ctx), self._string(node.args[1], ctx)),)
        raise Unresolved("an Or alternative that is not a FieldFilter or an And of them")

    def _order(self, call: ast.Call, ctx: _Ctx) -> tuple[str, str]:
        if not call.args:
            raise Unresolved("order_by() without a field")
        direction_nodes = [k.value for k in call.keywords if k.arg == "direction"]
        direction_nodes += call.args[1:2]
        direction = "ASCENDING"
        for node in direction_nodes:
            text = _name_of(node) if not isinstance(node, ast.Constant) else str(node.value)
            if text and text.upper() == "DESCENDING":
                direction = "DESCENDING"
        return self._string(call.args[0], ctx), direction

    def _kwargs_loop(self, name: str, ctx: _Ctx) -> str | None:
        """The function's name if ``name`` iterates over the keys of its ``**kwargs``."""
        kwarg = ctx.function.args.kwarg if ctx.function else None
        if ctx.function is None or kwarg is None:
            return None
        for node in ast.walk(ctx.function):
            if not (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)):
                continue
            func = node.iter.func
            over_items = (
                isinstance(func, ast.Attribute)
                and func.attr in ("items", "keys")
                and isinstance(func.value, ast.Name)
                and func.value.id == kwarg.arg
            )
            target = node.target
            key = target.elts[0] if isinstance(target, ast.Tuple) else target
            if over_items and isinstance(key, ast.Name) and key.id == name:
                return ctx.function.name
        return None

    def _kwargs_at_call_sites(self, function: str) -> Iterator[tuple[str, list[str]]]:
        found = False
        for module in self.modules:
            for node in ast.walk(module.tree):
                if not (isinstance(node, ast.Call) and _name_of(node.func) == function):
                    continue
                found = True
                keys: list[str] = []
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        keys.append(keyword.arg)
                    elif isinstance(keyword.value, ast.Dict):
                        ctx = _Ctx(module, None)
                        keys += [self._string(k, ctx) for k in keyword.value.keys if k]
                    else:
                        raise Unresolved(f"{module.name}:{node.lineno}: **kwargs not a dict")
                yield f"{module.name}:{node.lineno}", keys
        if not found:
            raise Unresolved(f"no call of {function}() found")

    # strings, paths, collections -----------------------------------------------------------

    def _string(self, node: ast.expr, ctx: _Ctx) -> str:
        """A string expression's value: literals, +, local variables, module constants, and
        names imported from other modules (``paths.PARTICIPANT``, ``BLOCKED_ON``)."""
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._string(node.left, ctx) + self._string(node.right, ctx)
        if isinstance(node, ast.Name):
            values = self._locals(ctx, node.id)
            if len(values) == 1:
                return self._string(values[0], ctx)
            if not values and node.id in ctx.module.constants:
                return self._string(ctx.module.constants[node.id], _Ctx(ctx.module, None))
            if not values and node.id in ctx.module.imports:
                return self._value_of(ctx.module.imports[node.id])
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            target = ctx.module.imports.get(node.value.id)
            if target:
                return self._value_of(f"{target}.{node.attr}")
        raise Unresolved(f"not a literal string: {ast.unparse(node)}")

    def _value_of(self, dotted: str) -> str:
        """A module-level string constant, from the scanned source or else the module itself."""
        module_name, _, attr = dotted.rpartition(".")
        for module in self.modules:
            if module.name == module_name and attr in module.constants:
                return self._string(module.constants[attr], _Ctx(module, None))
        try:
            value = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError):
            raise Unresolved(f"cannot read {dotted}") from None
        if not isinstance(value, str):
            raise Unresolved(f"{dotted} is not a string")
        return value

    def _collection(self, node: ast.expr, ctx: _Ctx) -> tuple[str, bool]:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr == "collection_group":
                return self._string(node.args[0], ctx), True
            if node.func.attr == "collection":
                return _last_segment(self._path(node.args[0], ctx)), False
        if isinstance(node, ast.Name):
            values = self._locals(ctx, node.id)
            if len(values) == 1:
                return self._collection(values[0], ctx)
        if isinstance(node, ast.Call):
            results = {self._collection(r, c) for r, c in self._returns(node)}
            if len(results) == 1:
                return results.pop()
        raise Unresolved(f"cannot tell the collection of {ast.unparse(node)}")

    def _path(self, node: ast.expr, ctx: _Ctx) -> str:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._path(node.right, ctx)
        if isinstance(node, ast.JoinedStr) and node.values:
            last = node.values[-1]
            if isinstance(last, ast.Constant) and "/" in str(last.value):
                return str(last.value)
        if isinstance(node, ast.Call) and _name_of(node.func) in ("collection_of", "build"):
            pattern = self._string(node.args[0], ctx)
            return pattern.rsplit("/", 1)[0] if _name_of(node.func) == "collection_of" else pattern
        if isinstance(node, ast.Call):
            results = {self._path(r, c) for r, c in self._returns(node)}
            if len(results) == 1:
                return results.pop()
        if isinstance(node, ast.Name):
            values = self._locals(ctx, node.id) or [ctx.module.constants.get(node.id)]
            if len(values) == 1 and values[0] is not None:
                return self._path(values[0], ctx)
        return self._string(node, ctx)

    def _returns(self, call: ast.Call) -> list[tuple[ast.expr, _Ctx]]:
        """The return expressions of the function a call names (unique by name or module)."""
        name = _name_of(call.func)
        candidates = self.functions.get(name or "", [])
        if len(candidates) > 1 and isinstance(call.func, ast.Attribute):
            owner = _name_of(call.func.value)
            candidates = [c for c in candidates if c.module.name.rsplit(".", 1)[-1] == owner]
        if len(candidates) != 1:
            raise Unresolved(f"cannot find the one function {ast.unparse(call.func)}")
        ctx = candidates[0]
        assert ctx.function is not None
        return [
            (n.value, ctx)
            for n in ast.walk(ctx.function)
            if isinstance(n, ast.Return) and n.value is not None
        ]


def _name_of(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _last_segment(path: str) -> str:
    segment = path.rstrip("/").rsplit("/", 1)[-1]
    if not segment or segment.startswith("{"):
        raise Unresolved(f"path {path!r} does not end in a collection id")
    return segment


def project_sources() -> dict[str, str]:
    sources = {}
    for top in SCANNED:
        for file in sorted((ROOT / top).rglob("*.py")):
            module = ".".join(file.relative_to(ROOT).with_suffix("").parts)
            sources[module] = file.read_text()
    return sources


# --- matching ---------------------------------------------------------------------------------


def needs_composite(query: Query) -> bool:
    """More than one field; a range or order on ``__name__`` after equality filters is served
    by the single-field index (its entries are kept in document-name order per value)."""
    fields = query.indexed_fields
    equality_only = all(op in EQUALITY_OPS for f, op in query.filters if f != "__name__")
    if "__name__" in query.fields and not (equality_only and len(fields) <= 1):
        return True
    return len(fields) > 1


def needs_group_field_index(query: Query) -> bool:
    """Firestore keeps single-field indexes for collection scope only: a collection-group query
    on one field needs a fieldOverrides entry with a COLLECTION_GROUP index."""
    return query.group and len(query.indexed_fields) == 1 and not needs_composite(query)


def serves_field(override: dict, query: Query) -> bool:
    if len(query.indexed_fields) != 1:
        return False
    (field,) = query.indexed_fields
    if override.get("collectionGroup") != query.collection or override.get("fieldPath") != field:
        return False
    group = [i for i in override.get("indexes", []) if i.get("queryScope") == "COLLECTION_GROUP"]
    ops = {op for f, op in query.filters if f != "__name__"}
    if any(op.startswith("array") for op in ops):
        return any(i.get("arrayConfig") == "CONTAINS" for i in group)
    wanted = {d for _, d in query.orders} or (
        {"ASCENDING", "DESCENDING"} if ops <= EQUALITY_OPS else {"ASCENDING"}
    )
    return any(i.get("order") in wanted for i in group)


def serves(index: dict, query: Query) -> bool:
    """Whether a composite index serves the query: equality fields first (any order), then the
    order-by and inequality fields in order (directions as given, or all reversed)."""
    scope = "COLLECTION_GROUP" if query.group else "COLLECTION"
    if index.get("collectionGroup") != query.collection or index.get("queryScope") != scope:
        return False
    equality = {f for f, op in query.filters if op in EQUALITY_OPS}
    tail = [(f, d) for f, d in query.orders if f not in equality]
    tail += [
        (f, "ASCENDING")
        for f, op in query.filters
        if op not in EQUALITY_OPS and f not in {t for t, _ in tail}
    ]
    fields = [f for f in index["fields"] if f["fieldPath"] != "__name__"]
    if len(fields) != len(equality) + len(tail):
        return False
    head, rest = fields[: len(equality)], fields[len(equality) :]
    if {f["fieldPath"] for f in head} != equality:
        return False
    ops = dict(query.filters)
    for f in head:
        contains = ops.get(f["fieldPath"], "").startswith("array")
        if contains != ("arrayConfig" in f):
            return False
    for flip in (False, True):
        want = [(f, _flip(d) if flip else d) for f, d in tail]
        if [(f["fieldPath"], f.get("order")) for f in rest] == want:
            return True
    return False


def _flip(direction: str) -> str:
    return "DESCENDING" if direction == "ASCENDING" else "ASCENDING"


def load_indexes() -> list[dict]:
    return json.loads(INDEXES.read_text())["indexes"]


def load_field_overrides() -> list[dict]:
    return json.loads(INDEXES.read_text()).get("fieldOverrides", [])


def is_ttl_only(override: dict) -> bool:
    """A TTL field exempt from indexing: no query reads it, and Firestore advises against
    indexing a TTL timestamp (its ever-increasing values make a write hot spot)."""
    return override.get("ttl") is True and override.get("indexes") == []


def _scan() -> tuple[list[Query], list[str]]:
    scanner, queries, problems = Scanner(project_sources()), [], []
    try:
        queries = list(scanner.queries())
    except Unresolved as why:
        problems.append(str(why))
    return queries, problems


QUERIES, PROBLEMS = _scan()
COMPOSITE = [q for q in QUERIES if needs_composite(q)]
GROUP_SINGLE = [q for q in QUERIES if needs_group_field_index(q)]


# --- tests ------------------------------------------------------------------------------------


def test_every_query_in_the_functions_is_understood() -> None:
    assert not PROBLEMS, PROBLEMS
    assert len(COMPOSITE) >= 3, "the scanner lost the functions' queries"


@pytest.mark.parametrize("query", COMPOSITE, ids=[q.site for q in COMPOSITE])
def test_every_multi_field_query_has_a_composite_index(query: Query) -> None:
    entry = {
        "collectionGroup": query.collection,
        "queryScope": "COLLECTION_GROUP" if query.group else "COLLECTION",
        "fields": [{"fieldPath": f, "order": "ASCENDING"} for f, _ in query.filters]
        + [{"fieldPath": f, "order": d} for f, d in query.orders],
    }
    assert any(serves(index, query) for index in load_indexes()), (
        f"no index in firestore.indexes.json serves {query}; add e.g. {json.dumps(entry)}"
    )


@pytest.mark.parametrize("query", GROUP_SINGLE, ids=[q.site for q in GROUP_SINGLE])
def test_every_collection_group_query_on_one_field_has_a_field_index(query: Query) -> None:
    (field,) = query.indexed_fields
    entry = {
        "collectionGroup": query.collection,
        "fieldPath": field,
        "indexes": [
            *({"order": o, "queryScope": "COLLECTION"} for o in ("ASCENDING", "DESCENDING")),
            {"arrayConfig": "CONTAINS", "queryScope": "COLLECTION"},
            {"order": "ASCENDING", "queryScope": "COLLECTION_GROUP"},
        ],
    }
    assert any(serves_field(o, query) for o in load_field_overrides()), (
        f"no fieldOverrides entry serves {query}; add e.g. {json.dumps(entry)}"
    )


def test_every_index_serves_some_query() -> None:
    """Each index costs storage and write latency: none without a query."""
    unused = [i for i in load_indexes() if not any(serves(i, q) for q in COMPOSITE)]
    assert not unused, f"indexes no query uses: {unused}"
    unused = [
        o
        for o in load_field_overrides()
        if not is_ttl_only(o) and not any(serves_field(o, q) for q in QUERIES if len(q.fields) == 1)
    ]
    assert not unused, f"field overrides no query uses: {unused}"


def test_field_overrides_keep_the_automatic_indexes() -> None:
    """An override replaces all of a field's single-field indexes: it must list the automatic
    collection-scope ones, or queries on that field in one collection would break."""
    defaults = [
        {"order": "ASCENDING", "queryScope": "COLLECTION"},
        {"order": "DESCENDING", "queryScope": "COLLECTION"},
        {"arrayConfig": "CONTAINS", "queryScope": "COLLECTION"},
    ]
    for override in load_field_overrides():
        if is_ttl_only(override):
            continue
        for index in defaults:
            assert index in override["indexes"], (override["fieldPath"], index)


def test_the_journal_expires_by_a_ttl_policy() -> None:
    """The journal's ``expireAt`` (functions/journal.py) is its collection group's TTL field,
    deployed with the indexes (tools/deploy), and not indexed: nothing queries it."""
    field = RecordedCall.model_fields["expire_at"].alias
    (override,) = [o for o in load_field_overrides() if o["collectionGroup"] == journal.JOURNAL]
    assert override == {
        "collectionGroup": journal.JOURNAL,
        "fieldPath": field,
        "ttl": True,
        "indexes": [],
    }
    stored = RecordedCall(key="k", model_name="m", text="t", recorded_at=journal.now())
    assert field in stored.to_firestore()


def test_index_file_is_well_formed() -> None:
    data = json.loads(INDEXES.read_text())
    assert set(data) <= {"indexes", "fieldOverrides"}
    keys = set()
    for index in data["indexes"]:
        assert index["queryScope"] in ("COLLECTION", "COLLECTION_GROUP")
        assert len(index["fields"]) >= 2, "single-field indexes are automatic"
        for field in index["fields"]:
            assert ("order" in field) != ("arrayConfig" in field), field
            assert field.get("order", "ASCENDING") in ("ASCENDING", "DESCENDING")
        key = json.dumps(index, sort_keys=True)
        assert key not in keys, f"duplicate index {index}"
        keys.add(key)


SAMPLE = {
    "functions.store": """
from shared import paths
def db(): ...
def people(e):
    return db().collection(paths.collection_of(paths.PARTICIPANT, experimentId=e))
""",
    "functions.consts": """
PREFIX = "agent"
FIELD = PREFIX + "Config.agentId"
""",
    "functions.sample": """
from functions import consts, store
from shared import paths
from functions.consts import FIELD
BLOCKED = "blockedOn.document"
def imported(e):
    return store.people(e).where(filter=FieldFilter(FIELD, "==", 1)).order_by(consts.PREFIX)
def chain(e, c):
    return store.people(e).where(filter=FieldFilter("a", "==", c)).where("b", "<", 3).get()
def stepwise(e):
    col = store.db().collection(store.path(e) + "/chats")
    q = col.where(filter=FieldFilter("a", "in", [1]))
    q = q.order_by("t", direction=firestore.Query.DESCENDING)
    return q.get()
def by_kwargs(e, **where):
    query = store.people(e)
    for field, value in where.items():
        query = query.where(filter=FieldFilter(field, "==", value))
    return query.get()
def callers(e):
    by_kwargs(e, currentCohortId="c", currentStageId="s")
    by_kwargs(e, **{BLOCKED: "x"})
def group():
    return store.db().collection_group("logs").order_by("timestamp").get()
def either(e):
    both = And([FieldFilter("x", "==", 1), FieldFilter("y", "in", [2])])
    return store.people(e).where(filter=Or([both, FieldFilter("z", "==", 3)])).get()
def named(e):
    return store.find(paths.collection_of(paths.PARTICIPANT, experimentId=e), ("w", "==", 1))
def unfiltered(e):
    return store.find(paths.collection_of(paths.PARTICIPANT, experimentId=e), fields=["w"])
""",
}


def test_the_scanner_on_a_sample() -> None:
    found = {(q.collection, q.group, q.filters, q.orders) for q in Scanner(SAMPLE).queries()}
    assert found == {
        ("participants", False, (("a", "=="), ("b", "<")), ()),
        ("chats", False, (("a", "in"),), (("t", "DESCENDING"),)),
        ("participants", False, (("currentCohortId", "=="), ("currentStageId", "==")), ()),
        ("participants", False, (("blockedOn.document", "=="),), ()),
        ("logs", True, (), (("timestamp", "ASCENDING"),)),
        ("participants", False, (("x", "=="), ("y", "in")), ()),
        ("participants", False, (("z", "=="),), ()),
        ("participants", False, (("agentConfig.agentId", "=="),), (("agent", "ASCENDING"),)),
        ("participants", False, (("w", "=="),), ()),
    }


@pytest.mark.parametrize(
    "text",
    [
        "def f(col, name):\n    return col.where(name, '==', 1).get()\n",
        "from functions import store\ndef f(c, name):\n    return store.find(c, (name, '==', 1))\n",
        "from functions import store\ndef f(c, where):\n    return store.find(c, where)\n",
    ],
)
def test_the_scanner_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(Unresolved):
        list(Scanner({"functions.x": text}).queries())


def test_index_matching() -> None:
    q = Query("x", "participants", False, (("a", "=="), ("b", "==")), (("t", "DESCENDING"),))
    index = {
        "collectionGroup": "participants",
        "queryScope": "COLLECTION",
        "fields": [
            {"fieldPath": "b", "order": "ASCENDING"},
            {"fieldPath": "a", "order": "DESCENDING"},
            {"fieldPath": "t", "order": "DESCENDING"},
        ],
    }
    assert serves(index, q)
    assert not serves({**index, "queryScope": "COLLECTION_GROUP"}, q)
    assert not serves({**index, "fields": index["fields"][:2]}, q)
    assert not serves({**index, "fields": [index["fields"][2], *index["fields"][:2]]}, q)
    group = Query("x", "logs", True, (("kind", "=="),), ())
    override = {"collectionGroup": "logs", "fieldPath": "kind", "indexes": []}
    assert not serves_field(override, group)
    override["indexes"] = [{"order": "DESCENDING", "queryScope": "COLLECTION_GROUP"}]
    assert serves_field(override, group)
    ordered = dataclasses.replace(group, filters=(), orders=(("kind", "ASCENDING"),))
    assert not serves_field(override, ordered)
