"""An independent check of issue 28's rule on SQL text: every statement that reads or writes a
tenant table carries the tenant.

It reads the SQL a dialect compiled (or a driver was sent), not the SQLAlchemy construct, and
shares no code with ``acti_store.tenancy.scoped``: a small tokenizer, then per query (each
SELECT, UPDATE, DELETE, INSERT, subqueries and CTE bodies apart, UNION's arms apart):

* each reference to a tenant table (``FROM``/``JOIN``/``,`` in a FROM list, ``UPDATE``,
  ``DELETE FROM``, each with its alias) needs ``<table-or-alias>.tenant = <parameter>`` (either
  side) as a term of that query's own WHERE, or of an ON clause that filters it: an inner join's
  ON filters every table of the query, an outer join's only its optional side. A term counts
  only when it is ANDed at the clause's top level (a clause with a top-level OR has none);
  Every table of a multi-table UPDATE or DELETE counts (``UPDATE a ... FROM b``, MySQL's
  ``UPDATE a, b``, ``DELETE FROM a USING b``); where the SQL's parameters are positional
  (``?``, ``%s``, ``$1``) and their names are given (``problems(..., names=)``: the statement's
  own, in order), the parameter must be the one named ``tenant``, as a named one must;
* an ``INSERT INTO``/``COPY`` into a tenant table names ``tenant`` in its column list (its
  ``SELECT``, if any, is a query of its own, checked as above);
* the tenant is never spliced into the SQL: no ``tenant = 'acme'`` (either side, or ``TO``), no
  ``set_config('acti.tenant', 'acme', ...)`` (row-level security's setting takes a parameter).

The tenant tables are the tables of the schema with a ``tenant`` column (``tenant_tables``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from sqlalchemy import MetaData

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
    | (?P<string>'(?:[^']|'')*')
    | (?P<quoted>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
    | (?P<param>\?|%\(\w+\)s|%s|:\w+|\$\d+)
    | (?P<cast>::)
    | (?P<word>[A-Za-z_][A-Za-z_0-9$]*)
    | (?P<number>\d+(?:\.\d+)?)
    | (?P<punct><>|!=|<=|>=|.)
    """,
    re.VERBOSE | re.DOTALL,
)

#: Keywords that start a query (a parenthesised group starting with one is a subquery).
_QUERY_STARTS = frozenset({"SELECT", "WITH", "INSERT", "UPDATE", "DELETE", "VALUES"})
#: Keywords that end a FROM list or a condition clause at a query's top level.
_CLAUSE_ENDS = frozenset(
    {
        "WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "RETURNING", "FOR", "WINDOW", "OFFSET",
        "SET", "VALUES", "SELECT", "ON", "JOIN", "INNER", "LEFT", "RIGHT", "FULL", "CROSS",
        "OUTER", "NATURAL", "STRAIGHT_JOIN", "LOCK",
    }
)  # fmt: skip
#: Keywords that end a comma list of tables (FROM, UPDATE's, USING's).
_LIST_ENDS = frozenset(
    {"SET", "GROUP", "ORDER", "LIMIT", "RETURNING", "VALUES", "SELECT", "WINDOW", "OFFSET"}
)
_SET_OPERATORS = frozenset({"UNION", "INTERSECT", "EXCEPT"})
_NOT_ALIASES = _CLAUSE_ENDS | _SET_OPERATORS | {
    "AS", "USING", "FROM", "DEFAULT", "FORCE", "USE", "IGNORE", "INDEXED", "NOT", "TABLESAMPLE",
}  # fmt: skip


def tenant_tables(metadata: MetaData) -> frozenset[str]:
    """The tables of ``metadata`` that have a ``tenant`` column."""
    return frozenset(t.name for t in metadata.tables.values() if "tenant" in t.c)


@dataclass
class _Token:
    kind: str
    text: str
    #: A positional parameter's name, where the statement's names are known (``problems``).
    bound: str | None = None

    @property
    def upper(self) -> str:
        return self.text.upper() if self.kind == "word" else self.text

    @property
    def name(self) -> str | None:
        """The identifier this token is (unquoted, lower case), if it is one."""
        if self.kind == "word":
            return self.text.lower()
        if self.kind == "quoted":
            return self.text[1:-1].lower()
        return None


@dataclass
class _Group:
    """A parenthesised group (or the whole statement): tokens and nested groups."""

    items: list[_Token | _Group] = field(default_factory=list)

    def first_word(self) -> str | None:
        for item in self.items:
            return item.upper if isinstance(item, _Token) else None
        return None


def _tokens(sql: str) -> list[_Token]:
    tokens = []
    for match in _TOKEN.finditer(sql):
        kind = match.lastgroup
        assert kind is not None
        if kind != "space":
            tokens.append(_Token(kind, match.group()))
    return tokens


def _grouped(tokens: list[_Token]) -> _Group:
    stack = [_Group()]
    for token in tokens:
        if token.text == "(" and token.kind == "punct":
            group = _Group()
            stack[-1].items.append(group)
            stack.append(group)
        elif token.text == ")" and token.kind == "punct":
            if len(stack) == 1:
                raise ValueError("unbalanced parentheses")
            stack.pop()
        else:
            stack[-1].items.append(token)
    if len(stack) != 1:
        raise ValueError("unbalanced parentheses")
    return stack[0]


def _queries(group: _Group) -> Iterator[list[_Token | _Group]]:
    """Each query of ``group`` (a statement or a subquery): its top-level items, split at UNION
    and the like; then the queries of every nested group."""
    arm: list[_Token | _Group] = []
    for item in group.items:
        if isinstance(item, _Token) and item.upper in _SET_OPERATORS:
            yield arm
            arm = []
        elif not arm and isinstance(item, _Token) and item.upper in {"ALL", "DISTINCT"}:
            continue  # UNION ALL
        else:
            arm.append(item)
    yield arm
    for item in group.items:
        if isinstance(item, _Group):
            yield from _queries(item)


@dataclass
class _Reference:
    table: str
    alias: str
    #: Where a condition on it may stand: "where", "inner" (an inner join's ON) or the id of
    #: the outer join's ON clause whose optional side it is.
    filtered_by: set[str]
    what: str


def _is_query(items: list[_Token | _Group]) -> bool:
    first = next((i for i in items if isinstance(i, _Token)), None)
    return first is not None and first.upper in _QUERY_STARTS | {"COPY"}


def _tenant_term(items: list[_Token | _Group], at: int) -> str | None:
    """The alias of a ``<alias>.tenant = <param>`` (or ``<param> = <alias>.tenant``) term that
    starts at ``items[at]``, if one does."""

    def column(i: int) -> str | None:
        window = items[i : i + 3]
        if len(window) == 3 and all(isinstance(t, _Token) for t in window):
            alias, dot, col = window
            assert isinstance(alias, _Token) and isinstance(dot, _Token)
            assert isinstance(col, _Token)
            if dot.text == "." and col.name == "tenant" and alias.name is not None:
                return alias.name
        return None

    def param(i: int) -> int | None:
        """The index after a parameter (with its ``::TYPE`` cast) at ``i``, if one is there."""
        if i >= len(items):
            return None
        token = items[i]
        if not isinstance(token, _Token) or token.kind != "param":
            return None
        named = re.fullmatch(r"%\((\w+)\)s|:(\w+)", token.text)
        if named is not None and "tenant" not in named.groups():
            return None
        if token.bound is not None and token.bound != "tenant":
            return None
        i += 1
        if i + 1 < len(items) and isinstance(items[i], _Token) and items[i].kind == "cast":
            i += 2
        return i

    def equals(i: int) -> bool:
        return i < len(items) and isinstance(items[i], _Token) and items[i].text == "="

    alias = column(at)
    if alias is not None and equals(at + 3) and param(at + 4) is not None:
        return alias
    after = param(at)
    if after is not None and equals(after):
        return column(after + 1)
    return None


def _check_query(items: list[_Token | _Group], tables: frozenset[str]) -> list[str]:
    """The problems of one query (its top-level items)."""
    if not _is_query(items):
        return []
    tokens_upper = [i.upper if isinstance(i, _Token) else None for i in items]
    references: list[_Reference] = []
    #: Conditions found: (clause id, alias); clause id "where", "inner" or "outer<n>".
    terms: set[tuple[str, str]] = set()
    problems: list[str] = []
    clause: str | None = None  # the condition clause being read
    clause_terms: list[str] = []
    clause_has_or = False
    #: Where the references of a comma list stand, while one is read (FROM, UPDATE, USING).
    listing: tuple[str, set[str]] | None = None
    join_kind = "inner"
    pending_outer: list[_Reference] = []

    def close_clause() -> None:
        nonlocal clause, clause_terms, clause_has_or
        if clause is not None and not clause_has_or:
            terms.update((clause, alias) for alias in clause_terms)
        clause, clause_terms, clause_has_or = None, [], False

    def reference_at(i: int, what: str, filtered_by: set[str]) -> None:
        """A table reference at ``items[i]`` (possibly ``schema.table``), with its alias."""
        token = items[i] if i < len(items) else None
        if not isinstance(token, _Token) or token.name is None:
            return
        name, j = token.name, i + 1
        if j + 1 < len(items) and isinstance(items[j], _Token) and items[j].text == ".":
            following = items[j + 1]
            if isinstance(following, _Token) and following.name is not None:
                name, j = following.name, j + 2
        if name not in tables:
            return
        alias = name
        if j < len(items) and tokens_upper[j] == "AS":
            j += 1
        candidate = items[j] if j < len(items) else None
        if (
            isinstance(candidate, _Token)
            and candidate.name is not None
            and candidate.upper not in _NOT_ALIASES
        ):
            alias = candidate.name
        references.append(_Reference(name, alias, filtered_by, what))

    outer_count = 0
    for i, word in enumerate(tokens_upper):
        if word is None:
            continue
        previous = tokens_upper[i - 1] if i else None
        if word in {"WHERE", "ON", "HAVING"}:
            close_clause()
            listing = None
            if word == "WHERE":
                clause = "where"
            elif word == "ON" and tokens_upper[i + 1 : i + 2] in (["CONFLICT"], ["DUPLICATE"]):
                clause = None  # an upsert's conflict target: no condition
            elif word == "ON":
                if join_kind == "inner":
                    clause = "inner"
                else:
                    outer_count += 1
                    clause = f"outer{outer_count}"
                    for ref in pending_outer:
                        ref.filtered_by.add(clause)
                pending_outer = []
            else:
                clause = "having"
            continue
        if word in _CLAUSE_ENDS:
            close_clause()
        if word in _LIST_ENDS:
            listing = None
        if word == "FROM" and previous != "DELETE":
            listing = ("FROM", {"where", "inner"})
            join_kind = "inner"
            reference_at(i + 1, "FROM", {"where", "inner"})
            continue
        if word == "JOIN" or word == "STRAIGHT_JOIN":
            kinds = {t for t in tokens_upper[max(0, i - 2) : i] if t}
            outer = bool(kinds & {"LEFT", "RIGHT", "FULL"})
            join_kind = "outer" if outer else "inner"
            listing = ("FROM", {"where", "inner"})
            before = len(references)
            reference_at(i + 1, "JOIN", {"where"} if outer else {"where", "inner"})
            if outer:
                if kinds & {"RIGHT", "FULL"}:
                    problems.append("a RIGHT or FULL join: this check reads none")
                pending_outer = references[before:]
            continue
        if word == "," and listing is not None:
            reference_at(i + 1, listing[0], set(listing[1]))
            continue
        if word == "UPDATE" and previous not in {"FOR", "DO", "KEY"}:
            reference_at(i + 1, "UPDATE", {"where"})
            listing = ("UPDATE", {"where"})  # MySQL's UPDATE a, b SET ...
            continue
        if word == "USING" and i + 1 < len(items) and isinstance(items[i + 1], _Token):
            reference_at(i + 1, "USING", {"where"})  # DELETE FROM a USING b (not JOIN USING (c))
            listing = ("USING", {"where"})
            continue
        if word == "DELETE":
            j = i + 2 if tokens_upper[i + 1 : i + 2] == ["FROM"] else i + 1
            reference_at(j, "DELETE", {"where"})
            continue
        if word in {"INTO", "COPY"}:
            problems.extend(_insert_problems(items, i + 1, tables, word))
            continue
        if clause is not None:
            if word == "OR":
                clause_has_or = True
            elif previous in {"WHERE", "ON", "AND"}:
                alias = _tenant_term(items, i)
                if alias is not None:
                    clause_terms.append(alias)
    close_clause()
    for ref in references:
        if not any((where, ref.alias) in terms for where in ref.filtered_by):
            shown = ref.table if ref.alias == ref.table else f"{ref.table} AS {ref.alias}"
            problems.append(f"{ref.what} {shown} without {ref.alias}.tenant = <parameter>")
    return problems


def _insert_problems(
    items: list[_Token | _Group], at: int, tables: frozenset[str], what: str
) -> list[str]:
    token = items[at] if at < len(items) else None
    if not isinstance(token, _Token) or token.name is None:
        return []
    name, j = token.name, at + 1
    if j + 1 < len(items) and isinstance(items[j], _Token) and items[j].text == ".":
        following = items[j + 1]
        if isinstance(following, _Token) and following.name is not None:
            name, j = following.name, j + 2
    if name not in tables:
        return []
    columns = items[j] if j < len(items) else None
    if not isinstance(columns, _Group):
        return [f"{what} {name} without a column list naming tenant"]
    named = {t.name for t in columns.items if isinstance(t, _Token) and t.name is not None}
    return [] if "tenant" in named else [f"{what} {name} without tenant in its columns"]


def _name_positional(tokens: list[_Token], names: Sequence[str]) -> None:
    """Give each positional parameter of ``tokens`` its name: ``$n`` the n-th of ``names``,
    ``?`` and ``%s`` the next one in order."""
    following = iter(names)
    for token in tokens:
        if token.kind != "param" or token.text.startswith((":", "%(")):
            continue
        if token.text.startswith("$"):
            number = int(token.text[1:])
            token.bound = names[number - 1] if number <= len(names) else None
        else:
            token.bound = next(following, None)


def _spliced(tokens: list[_Token]) -> list[str]:
    """Each place the tenant is written into the SQL as a string rather than bound."""
    found = []
    texts = [t.upper for t in tokens]
    for i, token in enumerate(tokens):
        window = texts[i : i + 3]
        after = tokens[i + 2] if i + 2 < len(tokens) else None
        if (
            token.name == "tenant"
            and window[1:2] in (["="], ["TO"])
            and after is not None
            and after.kind == "string"
        ):
            found.append(f"the tenant spliced into the SQL: tenant {window[1]} {after.text}")
        before = tokens[i - 2] if i >= 2 else None
        if (
            token.name == "tenant"
            and texts[i - 1 : i] == ["="]
            and before is not None
            and before.kind == "string"
        ):
            found.append(f"the tenant spliced into the SQL: {before.text} = tenant")
        if token.name == "set_config" and texts[i + 1 : i + 2] == ["("]:
            setting, comma, value = [*tokens[i + 2 : i + 5], None, None, None][:3]
            if (
                setting is not None
                and setting.text.strip("'").endswith(".tenant")
                and comma is not None
                and value is not None
                and value.kind == "string"
            ):
                found.append(f"the tenant spliced into the SQL: set_config(..., {value.text}")
    return found


def problems(sql: str, tables: Iterable[str], names: Sequence[str] | None = None) -> list[str]:
    """What breaks the rule in ``sql`` (none: it keeps it). ``names``: its parameters' names,
    in order, where they are positional (a ``text()``'s ``agents.tenant = ?`` carries the
    tenant only if that parameter is ``tenant``)."""
    tenant_tables_ = frozenset(tables)
    tokens = _tokens(sql)
    if names is not None:
        _name_positional(tokens, names)
    return _spliced(tokens) + [
        problem
        for query in _queries(_grouped(tokens))
        for problem in _check_query(query, tenant_tables_)
    ]
