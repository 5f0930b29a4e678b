"""Cut a source file into chunks along its function and class boundaries, line windows failing that.

tree-sitter finds the definitions; every non-blank line of the file lands in at least one
chunk (a definition, a window of a long one, or the code between definitions), so nothing
a search could need is dropped. Without tree-sitter or a grammar, a file is cut into
overlapping line windows.
"""

from __future__ import annotations

import hashlib
import importlib
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tree_sitter import Language, Node, Parser


@dataclass(frozen=True)
class Chunk:
    """Whole source lines start..end (1-based, inclusive): one definition, a window, or code between."""

    start: int
    end: int
    kind: str  # function method class interface struct enum impl trait type module window
    name: str  # qualified, "Parser.parse"; "" for the code between definitions and windows
    text: str  # the lines themselves, newlines included
    language: str  # "text" when the extension is not a language we know

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "surrogatepass")).hexdigest()


_EXTENSIONS: Mapping[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".go": "go",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".rs": "rust",
    ".java": "java",
}
_GRAMMARS: Mapping[str, tuple[str, str]] = {
    "python": ("tree_sitter_python", "language"),
    "go": ("tree_sitter_go", "language"),
    "javascript": ("tree_sitter_javascript", "language"),
    "typescript": ("tree_sitter_typescript", "language_typescript"),
    "tsx": ("tree_sitter_typescript", "language_tsx"),
    "rust": ("tree_sitter_rust", "language"),
    "java": ("tree_sitter_java", "language"),
}


@dataclass(frozen=True)
class _Rules:
    """How one grammar spells definitions."""

    kinds: Mapping[str, str]  # node type → kind of the definition it is
    attached: frozenset[str]  # comments, decorators, attributes that belong to what follows
    wrappers: frozenset[str] = frozenset()  # nodes around a definition that widen its span
    flattened: frozenset[str] = frozenset({"ERROR"})  # nodes whose children are searched too


_JAVASCRIPT_KINDS = {
    "function_declaration": "function",
    "generator_function_declaration": "function",
    "class_declaration": "class",
    "method_definition": "method",
    "lexical_declaration": "function",  # only when a declarator's value is a function
    "variable_declaration": "function",
    "field_definition": "method",  # only when its value is a function: handle = () => {}
}
_TYPESCRIPT_KINDS = {
    **_JAVASCRIPT_KINDS,
    "public_field_definition": "method",
    "abstract_class_declaration": "class",
    "interface_declaration": "interface",
    "type_alias_declaration": "type",
    "enum_declaration": "enum",
    "function_signature": "function",
    "method_signature": "method",
    "abstract_method_signature": "method",
    "internal_module": "module",
    "module": "module",
}
_TYPESCRIPT = _Rules(
    _TYPESCRIPT_KINDS,
    attached=frozenset({"comment", "decorator"}),
    # namespace N {} parses as an expression statement
    wrappers=frozenset({"export_statement", "ambient_declaration", "expression_statement"}),
)
_RULES: Mapping[str, _Rules] = {
    "python": _Rules(
        {"function_definition": "function", "class_definition": "class"},
        attached=frozenset({"comment"}),
        wrappers=frozenset({"decorated_definition"}),
    ),
    "go": _Rules(
        {
            "function_declaration": "function",
            "method_declaration": "method",
            "type_declaration": "type",
            "type_spec": "type",
            "type_alias": "type",
        },
        attached=frozenset({"comment"}),
    ),
    "javascript": _Rules(
        _JAVASCRIPT_KINDS,
        attached=frozenset({"comment", "decorator"}),
        wrappers=frozenset({"export_statement"}),
    ),
    "typescript": _TYPESCRIPT,
    "tsx": _TYPESCRIPT,
    "rust": _Rules(
        {
            "function_item": "function",
            "function_signature_item": "function",
            "struct_item": "struct",
            "union_item": "struct",
            "enum_item": "enum",
            "trait_item": "trait",
            "impl_item": "impl",
            "mod_item": "module",
            "type_item": "type",
        },
        attached=frozenset({"line_comment", "block_comment", "attribute_item"}),
    ),
    "java": _Rules(
        {
            "class_declaration": "class",
            "record_declaration": "class",
            "interface_declaration": "interface",
            "annotation_type_declaration": "interface",
            "enum_declaration": "enum",
            "method_declaration": "method",
            "constructor_declaration": "method",
            "compact_constructor_declaration": "method",
        },
        attached=frozenset({"line_comment", "block_comment"}),
        flattened=frozenset({"ERROR", "enum_body_declarations"}),
    ),
}
_NO_RULES = _Rules({}, attached=frozenset())
_CONTAINERS = frozenset({"class", "interface", "trait", "impl", "enum", "module"})
_CLASS_LIKE = _CONTAINERS - {"module"}  # a function directly inside one is a method
_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "generator_function"})
_DEFAULT_EXPORTS = {
    "function_expression": "function",
    "arrow_function": "function",
    "class": "class",
}
_MAX_DEPTH = 32  # deeper nests are cut as windows, far from Python's recursion limit
_CLOSING = re.compile(r"[\s)\]};,]*")  # a line that only closes what an earlier line opened


# What people wrote about the code: comments that start a line (after code, "#" and "//"
# are too often inside a string or a URL) and, in Python, strings that start a line
# (docstrings). Every language we chunk but Python spells comments as C does.
_HASH_COMMENT = re.compile(r"^[ \t]*#+!?[ \t]?(.*)$", re.M)
_DOCSTRING = re.compile(r"^[ \t]*[rRuU]?(\"\"\"|\'\'\')(.*?)\1", re.M | re.S)
_SLASH_COMMENT = re.compile(r"^[ \t]*//+[/!]?[ \t]?(.*)$", re.M)
_BLOCK_COMMENT = re.compile(r"^[ \t]*/\*+!?(.*?)\*+/", re.M | re.S)
_STAR_MARGIN = re.compile(r"^[ \t]*\*+(?!/)[ \t]?", re.M)


def prose(chunk: Chunk) -> str:
    """Return the words of a chunk's comments and docstrings, on one line.

    A question about code ("where do we split a command line?") is worded as they are,
    not as the code is: indexed as a field of their own they raised recall@1 on
    bench_code's standard-library questions from 0.37 to 0.57. Text in an unknown
    language gives "" (a "#" or "//" there may be anything).
    """
    text = chunk.text
    if chunk.language == "python":
        parts = [m.group(2) for m in _DOCSTRING.finditer(text)]
        parts += [m.group(1) for m in _HASH_COMMENT.finditer(text)]
    elif chunk.language in _GRAMMARS:
        parts = [_STAR_MARGIN.sub("", m.group(1)) for m in _BLOCK_COMMENT.finditer(text)]
        parts += [m.group(1) for m in _SLASH_COMMENT.finditer(text)]
    else:
        return ""
    return " ".join(" ".join(parts).split())


def language_of(path: str) -> str | None:
    """Name the language of a file from its extension; None when it is not one we chunk."""
    return _EXTENSIONS.get(PurePath(path).suffix.lower())


def tree_sitter_languages() -> frozenset[str]:
    """List the languages whose tree-sitter grammar can be loaded here."""
    return frozenset(language for language in _GRAMMARS if _grammar(language) is not None)


def chunk_source(
    path: str,
    text: str,
    *,
    max_lines: int = 120,
    window: int = 60,
    overlap: int = 10,
    use_tree_sitter: bool = True,
) -> list[Chunk]:
    """Cut one file's text into chunks covering each non-blank line, sorted by (start, end).

    A definition of at most `max_lines` lines is one chunk; a longer class gives a header
    and its members, a longer function windows of `window` lines overlapping by `overlap`.
    Text that is blank or binary (a NUL in its first 8000 characters) gives no chunks.
    """
    if max_lines < 1 or window < 1 or not 0 <= overlap < window:
        raise ValueError(
            f"chunking needs max_lines >= 1 and 0 <= overlap < window; "
            f"got max_lines={max_lines}, window={window}, overlap={overlap}"
        )
    if not text.strip() or "\x00" in text[:8000]:
        return []
    lines = _split_lines(text)
    language = language_of(path)
    parser = _parser(language) if use_tree_sitter and language else None
    if parser is None or language is None:
        cutter = _Cutter(lines, language or "text", _NO_RULES, max_lines, window, overlap)
        chunks = cutter.span(1, len(lines), "window", "", window)
    else:
        cutter = _Cutter(lines, language, _RULES[language], max_lines, window, overlap)
        # tree-sitter counts rows by "\n" alone, as _split_lines does; "replace" keeps them
        root = parser.parse(text.encode("utf-8", "replace")).root_node
        chunks = cutter.fill(cutter.definitions(root.children, None), 1, len(lines))
    return sorted(set(chunks), key=lambda c: (c.start, c.end, c.kind, c.name))


def definitions(path: str, text: str) -> list[tuple[str, int, int]]:
    """List every named definition of a file, nested ones too: (qualified name, start, end).

    The lines are whole definitions widened to their attached comments and decorators, as
    chunk_source finds them, however long (a citation follows a symbol, not a chunk).
    Empty without tree-sitter or a grammar for the file's language.
    """
    language = language_of(path)
    parser = _parser(language) if language and text.strip() else None
    if parser is None or language is None:
        return []
    lines = _split_lines(text)
    cutter = _Cutter(lines, language, _RULES[language], 120, 60, 10)
    found: list[tuple[str, int, int]] = []
    pending = cutter.definitions(
        parser.parse(text.encode("utf-8", "replace")).root_node.children, None
    )
    while pending:
        definition = pending.pop()
        if definition.name:
            found.append((definition.name, definition.start, definition.end))
        if definition.body is not None and definition.depth < _MAX_DEPTH:
            pending += cutter.definitions(_spliced(definition.node, definition.body), definition)
    return sorted(found, key=lambda d: (d[1], d[2], d[0]))


@cache
def _grammar(language: str) -> Language | None:
    module_name, function = _GRAMMARS[language]
    try:
        from tree_sitter import Language

        return Language(getattr(importlib.import_module(module_name), function)())
    except (ImportError, AttributeError, TypeError, ValueError):
        # an absent, older or ABI-incompatible grammar: the file gets line windows instead
        return None


_parsers = threading.local()  # a Parser is not safe to share between threads


def _parser(language: str) -> Parser | None:
    cached: dict[str, Parser | None] = _parsers.__dict__.setdefault("by_language", {})
    if language not in cached:
        grammar = _grammar(language)
        if grammar is None:
            cached[language] = None
        else:
            from tree_sitter import Parser

            cached[language] = Parser(grammar)
    return cached[language]


def _split_lines(text: str) -> list[str]:
    # not str.splitlines: it also breaks at \f, \v and \x1c-\x1e, which tree-sitter does not
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


@dataclass(frozen=True)
class _Definition:
    start: int  # widened to the comments and decorators attached above it
    end: int
    kind: str
    name: str  # qualified
    depth: int  # how many definitions enclose it
    node: Node  # the definition itself, inside any wrapper
    body: Node | None  # where its members are, for a class-like container


@dataclass(frozen=True)
class _Cutter:
    """One file's lines, its grammar's rules and the sizes to cut them to."""

    lines: Sequence[str]
    language: str
    rules: _Rules
    max_lines: int
    window: int
    overlap: int

    def definitions(
        self, nodes: Iterable[Node], parent: _Definition | None, nesting: int = 0
    ) -> list[_Definition]:
        """Find the definitions among sibling nodes, each widened to what is attached above it."""
        found: list[_Definition] = []
        lead: int | None = None  # first line of the attached run just before this node
        lead_end = previous_end = 0
        for node in nodes:
            start, end = _first_line(node), min(_last_line(node), len(self.lines))
            if node.type in self.rules.attached:
                if lead is not None and start <= lead_end + 1:
                    lead_end = end
                elif start > previous_end:  # on a line of its own, not trailing earlier code
                    lead, lead_end = start, end
                else:
                    lead = None
            else:
                if lead is not None and start <= lead_end + 1:
                    start = lead
                classified = _classify(node, self.rules)
                if classified is not None:
                    found.append(_define(classified, start, end, parent))
                elif node.type in self.rules.flattened and nesting < _MAX_DEPTH:
                    found += self.definitions(node.children, parent, nesting + 1)
                lead = None
            previous_end = max(previous_end, end)
        return found

    def chunks_of(self, definition: _Definition) -> list[Chunk]:
        """Cut one definition: whole, as a header plus its members, or as windows."""
        start, end, kind, name = definition.start, definition.end, definition.kind, definition.name
        too_deep = definition.depth >= _MAX_DEPTH
        if definition.body is None or too_deep or end - start + 1 <= self.max_lines:
            return self.span(start, end, kind, name, self.max_lines)
        members = self.definitions(_spliced(definition.node, definition.body), definition)
        if not members:
            return self.span(start, end, kind, name, self.max_lines)
        first = members[0].start
        header = self.span(start, first - 1, kind, name, self.max_lines)
        return header + self.fill(members, first, end)

    def fill(self, definitions: Sequence[_Definition], lo: int, hi: int) -> list[Chunk]:
        """Chunk the definitions and the uncovered lines between them, lines lo..hi."""
        chunks: list[Chunk] = []
        cursor = lo
        for definition in definitions:
            if definition.start > cursor:
                self._gap(chunks, cursor, definition.start - 1)
            chunks += self.chunks_of(definition)
            cursor = max(cursor, definition.end + 1)
        if cursor <= hi:
            self._gap(chunks, cursor, hi)
        return chunks

    def _gap(self, chunks: list[Chunk], lo: int, hi: int) -> None:
        trimmed = self._trim(lo, hi)
        if trimmed is None:
            return
        lo, hi = trimmed
        if chunks and all(_CLOSING.fullmatch(line) for line in self.lines[lo - 1 : hi]):
            # a class's closing brace joins the member before it rather than stand alone
            last = max(range(len(chunks)), key=lambda i: (chunks[i].end, chunks[i].start))
            chunks[last] = self._chunk(chunks[last].start, hi, chunks[last].kind, chunks[last].name)
            return
        chunks += self.span(lo, hi, "module", "", self.window)

    def span(self, start: int, end: int, kind: str, name: str, limit: int) -> list[Chunk]:
        """One chunk for lines start..end when at most `limit` long, else overlapping windows."""
        trimmed = self._trim(start, end)
        if trimmed is None:
            return []
        start, end = trimmed
        if end - start + 1 <= limit:
            return [self._chunk(start, end, kind, name)]
        chunks = []
        for first in range(start, end + 1, self.window - self.overlap):
            part = self._trim(first, min(first + self.window - 1, end))
            if part is not None:
                chunks.append(self._chunk(*part, kind, name))
            if first + self.window - 1 >= end:
                break
        return chunks

    def _trim(self, start: int, end: int) -> tuple[int, int] | None:
        while start <= end and not self.lines[start - 1].strip():
            start += 1
        while end >= start and not self.lines[end - 1].strip():
            end -= 1
        return (start, end) if start <= end else None

    def _chunk(self, start: int, end: int, kind: str, name: str) -> Chunk:
        text = "".join(self.lines[start - 1 : end])
        return Chunk(start, end, kind, name, text, self.language)


def _define(
    classified: tuple[str, str, Node], start: int, end: int, parent: _Definition | None
) -> _Definition:
    kind, name, node = classified
    if kind == "function" and parent is not None and parent.kind in _CLASS_LIKE:
        kind = "method"
    if parent is not None and parent.name:
        name = f"{parent.name}.{name}"
    body = node.child_by_field_name("body") if kind in _CONTAINERS else None
    return _Definition(start, end, kind, name, parent.depth + 1 if parent else 0, node, body)


def _classify(node: Node, rules: _Rules) -> tuple[str, str, Node] | None:
    """Name the definition a node is: (kind, name, node holding any body), or None."""
    if not node.is_named:
        return None
    if node.type in rules.wrappers:
        return _unwrap(node, rules)
    kind = rules.kinds.get(node.type)
    return None if kind is None else _refine(node, kind)


def _unwrap(wrapper: Node, rules: _Rules) -> tuple[str, str, Node] | None:
    for child in wrapper.named_children:
        found = _classify(child, rules)
        if found is None and wrapper.type == "export_statement" and child.type in _DEFAULT_EXPORTS:
            found = (_DEFAULT_EXPORTS[child.type], "default", child)
        if found is not None:
            return found
    return None


def _refine(node: Node, kind: str) -> tuple[str, str, Node] | None:
    """Name a node of a definition type, or turn it down (a const holding no function)."""
    if node.type in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in _FUNCTION_VALUES:
                return kind, _name(declarator), value
        return None
    if node.type in ("field_definition", "public_field_definition"):
        value = node.child_by_field_name("value")
        if value is None or value.type not in _FUNCTION_VALUES:
            return None
        return kind, _name(node, "property") or _name(node), value
    if node.type == "type_declaration":  # Go: `type X …` is named by X; a `type (…)` group is not
        specs = [
            child for child in node.named_children if child.type in ("type_spec", "type_alias")
        ]
        return _refine(specs[0], kind) if len(specs) == 1 else (kind, "", node)
    if node.type in ("type_spec", "type_alias"):
        shape = node.child_by_field_name("type")
        shapes = {"struct_type": "struct", "interface_type": "interface"}
        return shapes.get(shape.type if shape else "", "type"), _name(node), node
    receiver = node.child_by_field_name("receiver")  # Go methods
    if receiver is not None:
        return kind, f"{_type_name(receiver)}.{_name(node)}", node
    if node.type == "impl_item":
        target = node.child_by_field_name("type")
        return kind, _type_name(target) if target else "", node
    if node.type == "mod_item" and node.child_by_field_name("body") is None:
        return None  # `mod x;` is a declaration, like an import
    return kind, _name(node).strip("\"'"), node  # TypeScript's `declare module "x"` quotes it


def _name(node: Node, field: str = "name") -> str:
    named = node.child_by_field_name(field)
    return _text(named) if named is not None else ""


def _type_name(node: Node) -> str:
    """The first type identifier in a type: Server in `*Server`, Foo in `Foo<T>`."""
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "type_identifier":
            return _text(current)
        stack.extend(reversed(current.named_children))
    return _text(node)


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "replace")


def _spliced(node: Node, body: Node) -> list[Node]:
    # a comment before a class body's first statement can be the class's child, not the body's
    children: list[Node] = []
    for child in node.children:
        children += body.children if child == body else [child]
    return children


def _first_line(node: Node) -> int:
    return node.start_point.row + 1


def _last_line(node: Node) -> int:
    # a node that takes its line's newline (a Rust /// comment) ends at column 0 of the next
    row, column = node.end_point
    return row if column == 0 and row > node.start_point.row else row + 1
