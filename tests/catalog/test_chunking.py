"""Chunking source files along definitions: exact chunks per language, windows, no line lost."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstore.catalog.chunking import Chunk, chunk_source, language_of, prose, tree_sitter_languages

ALL_LANGUAGES = frozenset({"python", "go", "javascript", "typescript", "tsx", "rust", "java"})


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def outline(chunks: list[Chunk]) -> list[tuple[int, int, str, str]]:
    return [(c.start, c.end, c.kind, c.name) for c in chunks]


def uncovered_lines(text: str, chunks: list[Chunk]) -> list[int]:
    covered = {line for c in chunks for line in range(c.start, c.end + 1)}
    lines = text.split("\n")
    return [
        number for number, line in enumerate(lines, 1) if line.strip() and number not in covered
    ]


def assert_well_formed(text: str, chunks: list[Chunk]) -> None:
    lines = [line + "\n" for line in text.split("\n")]
    lines[-1] = lines[-1][:-1]
    assert uncovered_lines(text, chunks) == []
    assert chunks == sorted(chunks, key=lambda c: (c.start, c.end, c.kind, c.name))
    for chunk in chunks:
        assert 1 <= chunk.start <= chunk.end <= len(lines)
        assert chunk.text == "".join(lines[chunk.start - 1 : chunk.end])
        assert chunk.text.strip()


# --- Python ---------------------------------------------------------------------------


def test_python_decorators_and_the_comment_block_above_attach_to_the_function() -> None:
    text = src('''
        import functools

        # Parse one line.
        # Returns a dict.
        @functools.cache
        @other(
            1,
        )
        def parse(line):
            """Docstring."""
            return {}

        # a comment separated by a blank line stays module code

        def render(value):
            return str(value)
        ''')
    chunks = chunk_source("p.py", text)
    assert outline(chunks) == [
        (1, 1, "module", ""),
        (3, 11, "function", "parse"),
        (13, 13, "module", ""),
        (15, 16, "function", "render"),
    ]
    assert chunks[1].text.startswith("# Parse one line.\n")
    assert chunks[1].language == "python"


def test_python_small_class_is_one_chunk_with_its_methods() -> None:
    text = src("""
        class Point:
            def __init__(self, x):
                self.x = x

            def norm(self):
                return abs(self.x)
        """)
    assert outline(chunk_source("p.py", text)) == [(1, 6, "class", "Point")]


def test_python_large_class_gives_header_members_and_the_code_between_them() -> None:
    text = src('''
        @dataclass
        class Parser:
            """Parses."""

            limit = 3

            # The inner one.
            class Token:
                def kind(self):
                    return 1

            @property
            def size(self):
                return 2

            other = 4

            async def fetch(self):
                await self.go()

        def tail():
            return 0
        ''')
    chunks = chunk_source("p.py", text, max_lines=10)
    assert outline(chunks) == [
        (1, 5, "class", "Parser"),
        (7, 10, "class", "Parser.Token"),
        (12, 14, "method", "Parser.size"),
        (16, 16, "module", ""),
        (18, 19, "method", "Parser.fetch"),
        (21, 22, "function", "tail"),
    ]
    # with room for it, the nested class is one chunk inside the parent's
    assert outline(chunk_source("p.py", text))[0] == (1, 19, "class", "Parser")


def test_python_nested_classes_are_named_by_their_path() -> None:
    text = src("""
        class Outer:
            x = 1

            class Inner:
                y = 2

                class Deepest:
                    def go(self):
                        pass

                    def stop(self):
                        pass
        """)
    assert outline(chunk_source("p.py", text, max_lines=6)) == [
        (1, 2, "class", "Outer"),
        (4, 5, "class", "Outer.Inner"),
        (7, 12, "class", "Outer.Inner.Deepest"),
    ]
    assert outline(chunk_source("p.py", text, max_lines=4)) == [
        (1, 2, "class", "Outer"),
        (4, 5, "class", "Outer.Inner"),
        (7, 7, "class", "Outer.Inner.Deepest"),
        (8, 9, "method", "Outer.Inner.Deepest.go"),
        (11, 12, "method", "Outer.Inner.Deepest.stop"),
    ]


def test_python_braces_and_def_inside_strings_never_make_chunks() -> None:
    text = src('''
        def one():
            s = "def fake(): {"
            t = """
        def also_fake():
            {
        """
            return s + t

        def two():
            return "}"
        ''')
    assert outline(chunk_source("p.py", text)) == [
        (1, 7, "function", "one"),
        (9, 10, "function", "two"),
    ]


def test_python_syntax_errors_still_yield_the_valid_definitions() -> None:
    text = src("""
        def good():
            return 1

        def broken():
            x = = 2

        def fine():
            return 3

        class K:
            def m(self:
                pass

        def last():
            return 4
        """)
    assert outline(chunk_source("p.py", text)) == [
        (1, 2, "function", "good"),
        (4, 5, "function", "broken"),
        (7, 8, "function", "fine"),
        (10, 12, "class", "K"),
        (14, 15, "function", "last"),
    ]


def test_python_definitions_inside_an_error_node_are_still_found() -> None:
    # the unclosed parenthesis swallows what follows into one ERROR node
    text = "def good():\n    return 1\n\ndef broken(:\n    x = 2\n\ndef fine():\n    return 3\n"
    chunks = chunk_source("p.py", text)
    assert outline(chunks)[0] == (1, 2, "function", "good")
    assert_well_formed(text, chunks)


def test_python_async_def_is_a_function() -> None:
    text = src("""
        async def fetch(url):
            return await get(url)
        """)
    assert outline(chunk_source("p.py", text)) == [(1, 2, "function", "fetch")]


def test_trailing_comment_of_earlier_code_does_not_attach_to_the_next_definition() -> None:
    text = src("""
        x = 1  # the count
        def f():
            return x
        """)
    assert outline(chunk_source("p.py", text)) == [(1, 1, "module", ""), (2, 3, "function", "f")]


# --- Go -------------------------------------------------------------------------------


def test_go_functions_methods_with_receivers_and_types() -> None:
    text = src("""
        package main

        import "fmt"

        // Server serves "{" requests.
        // It has an address.
        type Server struct {
        \taddr string
        }

        type Handler interface {
        \tHandle(x string) error
        }

        type ID int

        // Handle handles one request.
        func (s *Server) Handle(x string) error {
        \ty := "{"
        \tz := `{
        }`
        \t// {
        \treturn nil
        }

        func (Box[T]) Get() {}

        func main() { fmt.Println("}") }
        """)
    assert outline(chunk_source("main.go", text)) == [
        (1, 3, "module", ""),
        (5, 9, "struct", "Server"),
        (11, 13, "interface", "Handler"),
        (15, 15, "type", "ID"),
        (17, 24, "method", "Server.Handle"),
        (26, 26, "method", "Box.Get"),
        (28, 28, "function", "main"),
    ]


def test_go_grouped_type_declaration_is_one_type_chunk() -> None:
    text = src("""
        package p

        type (
        \tA = int
        \tB struct{}
        )
        """)
    assert outline(chunk_source("p.go", text)) == [(1, 1, "module", ""), (3, 6, "type", "")]


# --- JavaScript and TypeScript ----------------------------------------------------------


def test_javascript_functions_classes_methods_and_arrow_consts() -> None:
    text = src("""
        import x from "y";

        /** Adds. */
        export function add(a, b) {
          return a + b;
        }

        export const double = (n) => {
          return "{" + n;
        };

        const helper = function () {}, count = 2;
        const plain = 3;

        class Shape {
          constructor(side) {
            this.side = side;
          }

          area() {
            return this.side ** 2;
          }
        }

        export default function () {}
        """)
    chunks = chunk_source("a.mjs", text)
    assert outline(chunks) == [
        (1, 1, "module", ""),
        (3, 6, "function", "add"),
        (8, 10, "function", "double"),
        (12, 12, "function", "helper"),
        (13, 13, "module", ""),
        (15, 23, "class", "Shape"),
        (25, 25, "function", "default"),
    ]
    assert outline(chunk_source("a.js", text, max_lines=5))[5:8] == [
        (15, 15, "class", "Shape"),
        (16, 18, "method", "Shape.constructor"),
        (20, 23, "method", "Shape.area"),
    ]
    assert {c.language for c in chunks} == {"javascript"}


def test_typescript_interfaces_type_aliases_enums_and_decorated_classes() -> None:
    text = src("""
        export interface Shape {
          area(): number;
        }
        export type Id = string | number;
        enum Color { Red, Green }

        // The component.
        @Component({
          selector: "app",
        })
        export class App {
          private count = 0;

          @HostListener("click", [
            "$event",
          ])
          onClick(e: Event): void {
            this.count++;
          }

          handle = (e: Event) => {
            return e;
          };
        }

        export const f = <T,>(x: T): T => x;
        namespace Geometry { export function area() {} }
        """)
    assert outline(chunk_source("a.ts", text)) == [
        (1, 3, "interface", "Shape"),
        (4, 4, "type", "Id"),
        (5, 5, "enum", "Color"),
        (7, 24, "class", "App"),
        (26, 26, "function", "f"),
        (27, 27, "module", "Geometry"),
    ]
    assert outline(chunk_source("a.ts", text, max_lines=6))[3:7] == [
        (7, 12, "class", "App"),
        (14, 19, "method", "App.onClick"),
        (21, 24, "method", "App.handle"),
        (26, 26, "function", "f"),
    ]


def test_tsx_components_are_functions() -> None:
    text = src("""
        import React from "react";

        export const Button = ({ label }: Props) => {
          return <button>{"{"}{label}</button>;
        };

        export function App() {
          return <Button label="}" />;
        }
        """)
    chunks = chunk_source("App.tsx", text)
    assert outline(chunks) == [
        (1, 1, "module", ""),
        (3, 5, "function", "Button"),
        (7, 9, "function", "App"),
    ]
    assert {c.language for c in chunks} == {"tsx"}


# --- Rust -----------------------------------------------------------------------------


def test_rust_items_keep_their_doc_comments_and_attributes() -> None:
    text = src("""
        use std::fmt;

        /// A point.
        /// With two fields.
        #[derive(Debug, Clone)]
        pub struct Point {
            x: i32,
        }

        pub enum Shape { Circle, Square }

        pub trait Area {
            fn area(&self) -> f64;
        }

        impl fmt::Display for Point {
            fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
                write!(f, "{{")
            }
        }

        /// Entry.
        fn main() { let s = "{"; let r = r#"{"#; }

        type Meters = f64;
        """)
    assert outline(chunk_source("lib.rs", text)) == [
        (1, 1, "module", ""),
        (3, 8, "struct", "Point"),
        (10, 10, "enum", "Shape"),
        (12, 14, "trait", "Area"),
        (16, 20, "impl", "Point"),
        (22, 23, "function", "main"),
        (25, 25, "type", "Meters"),
    ]


def test_rust_large_impl_and_trait_give_type_qualified_methods() -> None:
    text = src("""
        impl<T: Clone> Stack<T> {
            const LIMIT: usize = 8;

            /// Makes one.
            pub fn new() -> Self {
                Stack { items: vec![] }
            }

            #[inline]
            fn len(&self) -> usize {
                self.items.len()
            }
        }

        trait Named {
            fn name(&self) -> String;

            fn shout(&self) -> String {
                self.name().to_uppercase()
            }
        }
        """)
    assert outline(chunk_source("s.rs", text, max_lines=5)) == [
        (1, 2, "impl", "Stack"),
        (4, 7, "method", "Stack.new"),
        (9, 13, "method", "Stack.len"),
        (15, 15, "trait", "Named"),
        (16, 16, "method", "Named.name"),
        (18, 21, "method", "Named.shout"),
    ]


def test_rust_inline_module_holds_named_functions() -> None:
    text = src("""
        #[cfg(test)]
        mod tests {
            use super::*;

            #[test]
            fn adds() {
                assert_eq!(1 + 1, 2);
            }
        }
        """)
    assert outline(chunk_source("t.rs", text)) == [(1, 9, "module", "tests")]
    assert outline(chunk_source("t.rs", text, max_lines=4)) == [
        (1, 3, "module", "tests"),
        (5, 9, "function", "tests.adds"),
    ]


# --- Java -----------------------------------------------------------------------------


JAVA = src("""
    package a.b;

    import java.util.List;

    /**
     * A greeter.
     */
    @Deprecated
    public class Greeter extends Base {
        private final String name;

        /** Makes one. */
        public Greeter(String name) {
            this.name = name;
        }

        @Override
        public String toString() {
            return "{" + name;
        }

        interface Listener {
            void heard(String word);
        }
    }

    enum Color { RED, GREEN; int code() { return 1; } }
    """)


def test_java_class_with_javadoc_and_annotation_is_one_chunk() -> None:
    assert outline(chunk_source("Greeter.java", JAVA)) == [
        (1, 3, "module", ""),
        (5, 25, "class", "Greeter"),
        (27, 27, "enum", "Color"),
    ]


def test_java_large_class_gives_constructor_methods_and_nested_interface() -> None:
    assert outline(chunk_source("Greeter.java", JAVA, max_lines=8)) == [
        (1, 3, "module", ""),
        (5, 10, "class", "Greeter"),
        (12, 15, "method", "Greeter.Greeter"),
        (17, 20, "method", "Greeter.toString"),
        (22, 25, "interface", "Greeter.Listener"),
        (27, 27, "enum", "Color"),
    ]


# --- windows and fallbacks ------------------------------------------------------------


def numbered(count: int) -> str:
    return "".join(f"line {n}\n" for n in range(1, count + 1))


def test_unknown_extension_gives_overlapping_windows() -> None:
    chunks = chunk_source("notes.txt", numbered(130), window=60, overlap=10)
    assert outline(chunks) == [
        (1, 60, "window", ""),
        (51, 110, "window", ""),
        (101, 130, "window", ""),
    ]
    assert {c.language for c in chunks} == {"text"}
    assert chunks[2].text == "".join(f"line {n}\n" for n in range(101, 131))


def test_windows_skip_blank_only_stretches_and_trim_blank_edges() -> None:
    text = "a\n" + "\n" * 30 + "b\n"
    assert outline(chunk_source("x.cfg", text, window=10, overlap=2)) == [
        (1, 1, "window", ""),
        (32, 32, "window", ""),
    ]


def test_disabled_tree_sitter_gives_windows_for_a_known_language() -> None:
    text = "def f():\n    return 1\n"
    chunks = chunk_source("p.py", text, use_tree_sitter=False)
    assert outline(chunks) == [(1, 2, "window", "")]
    assert chunks[0].language == "python"


def test_module_imports_and_falls_back_to_windows_without_tree_sitter(tmp_path: Path) -> None:
    code = textwrap.dedent("""
        import sys
        sys.modules["tree_sitter"] = None  # makes `import tree_sitter` fail
        from memstore.catalog.chunking import chunk_source, tree_sitter_languages
        chunks = chunk_source("p.py", "def f():\\n    return 1\\n")
        print(sorted(tree_sitter_languages()), [(c.start, c.end, c.kind) for c in chunks])
        """)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path
    )
    assert out.stdout.strip() == "[] [(1, 2, 'window')]"


def test_every_installed_grammar_loads() -> None:
    assert tree_sitter_languages() == ALL_LANGUAGES


def test_long_function_splits_into_overlapping_windows_that_keep_its_name() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(1, 30))
    text = "import os\n\ndef parse():\n" + body + "    return x1\n"
    chunks = chunk_source("p.py", text, max_lines=20, window=12, overlap=3)
    assert outline(chunks) == [
        (1, 1, "module", ""),
        (3, 14, "function", "parse"),
        (12, 23, "function", "parse"),
        (21, 32, "function", "parse"),
        (30, 33, "function", "parse"),
    ]


def test_long_module_code_between_definitions_is_cut_into_windows() -> None:
    text = numbered(25).replace("line", "x =") + "\ndef f():\n    pass\n"
    assert outline(chunk_source("p.py", text, window=10, overlap=0)) == [
        (1, 10, "module", ""),
        (11, 20, "module", ""),
        (21, 25, "module", ""),
        (27, 28, "function", "f"),
    ]


def test_blank_and_binary_text_give_no_chunks() -> None:
    assert chunk_source("p.py", "") == []
    assert chunk_source("p.py", "\n \n\t\n") == []
    assert chunk_source("blob.bin", "PK\x03\x04\x00\x00junk\n") == []


def test_windows_line_endings_keep_line_numbers_and_text() -> None:
    text = "import os\r\n\r\n# Doc.\r\ndef f():\r\n    return 1\r\n\r\nclass A {\r\n"
    chunks = chunk_source("p.py", text)
    assert outline(chunks)[:2] == [(1, 1, "module", ""), (3, 5, "function", "f")]
    assert chunks[1].text == "# Doc.\r\ndef f():\r\n    return 1\r\n"
    assert_well_formed(text, chunks)


def test_language_comes_from_the_extension() -> None:
    assert language_of("a/b.py") == "python"
    assert language_of("types.pyi") == "python"
    assert language_of("x.test.TS") == "typescript"
    assert language_of("x.d.mts") == "typescript"
    assert language_of("App.tsx") == "tsx"
    assert language_of("App.jsx") == "javascript"
    assert language_of("lib.cjs") == "javascript"
    assert language_of("main.rs") == "rust"
    assert language_of("Main.java") == "java"
    assert language_of("main.go") == "go"
    assert language_of("README.md") is None
    assert language_of("Makefile") is None


def test_digest_is_the_sha256_of_the_text() -> None:
    import hashlib

    (chunk,) = chunk_source("p.py", "def f():\n    pass\n")
    assert chunk.digest == hashlib.sha256(b"def f():\n    pass\n").hexdigest()


@pytest.mark.parametrize(
    ("max_lines", "window", "overlap"), [(0, 60, 10), (120, 0, 0), (120, 10, 10), (120, 10, -1)]
)
def test_sizes_that_cannot_cut_are_refused(max_lines: int, window: int, overlap: int) -> None:
    with pytest.raises(ValueError, match="overlap < window"):
        chunk_source("p.py", "x = 1\n", max_lines=max_lines, window=window, overlap=overlap)


# --- nothing is lost ------------------------------------------------------------------

SAMPLES = {
    "p.py": src("""
        import os
        @dec
        class A(B):
            '''Doc {.'''
            x = 1
            # c
            def m(self):
                return {"a": [1, 2]}
            async def n(self): ...
        def f(*a, **k):
            pass
        if __name__ == "__main__":
            f()
        """),
    "m.go": src("""
        package m
        // T is a type.
        type T struct{ a int }
        func (t *T) M() string { return "{" }
        func F() {
        \tgo func() {}()
        }
        var v = `raw {`
        """),
    "a.js": src("""
        // x
        export class A { m() { return `${1}{`; } static s = () => 1; }
        export const f = async () => {};
        function g() { /* } */ }
        module.exports = { g };
        """),
    "a.tsx": src("""
        @dec() export class C<T> implements I { @input() x!: T; m(): void {} }
        interface I { x: number }
        type U = A | B;
        export default () => <div>{"}"}</div>;
        """),
    "l.rs": src("""
        //! crate doc
        /// d
        #[derive(Debug)]
        struct S { a: u8 }
        impl S { fn new() -> Self { S { a: 0 } } }
        trait T { fn t(&self); }
        mod inner { pub fn x() {} }
        macro_rules! m { () => {} }
        """),
    "J.java": src("""
        package p;
        /** D. */
        @A public class J { int x; J() {} @B void m() {} class K {} }
        interface I { void i(); }
        enum E { A; void e() {} }
        """),
    "notes.txt": "plain text\n\nmore text {\n",
}


@st.composite
def mutated_sources(draw: st.DrawFn) -> tuple[str, str]:
    path = draw(st.sampled_from(sorted(SAMPLES)))
    lines = SAMPLES[path].split("\n")
    junk = st.text(st.sampled_from(list("{}()[];:'\"`#/*@ \tabcdef=\r\n\\")), max_size=12)
    for _ in range(draw(st.integers(0, 6))):
        at = draw(st.integers(0, len(lines)))
        action = draw(st.sampled_from(["delete", "duplicate", "insert", "indent", "cut"]))
        if action == "delete" and at < len(lines):
            del lines[at]
        elif action == "duplicate" and at < len(lines):
            lines.insert(at, lines[at])
        elif action == "insert":
            lines.insert(at, draw(junk))
        elif action == "indent" and at < len(lines):
            lines[at] = "    " + lines[at]
        elif action == "cut" and at < len(lines):
            lines[at] = lines[at][: draw(st.integers(0, len(lines[at])))]
    separator = draw(st.sampled_from(["\n", "\r\n"]))
    return path, separator.join(lines)


@settings(max_examples=300, deadline=None)
@given(
    mutated_sources(),
    st.integers(1, 12),
    st.integers(1, 8),
    st.integers(0, 7),
)
def test_every_nonblank_line_lands_in_a_chunk(
    source: tuple[str, str], max_lines: int, window: int, overlap: int
) -> None:
    path, text = source
    overlap = min(overlap, window - 1)
    chunks = chunk_source(path, text, max_lines=max_lines, window=window, overlap=overlap)
    assert_well_formed(text, chunks)
    again = chunk_source(path, text, max_lines=max_lines, window=window, overlap=overlap)
    assert again == chunks


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(SAMPLES)), st.text(max_size=300))
def test_arbitrary_text_never_raises_and_loses_nothing(path: str, text: str) -> None:
    chunks = chunk_source(path, text, max_lines=4, window=3, overlap=1)
    if "\x00" in text:
        assert chunks == []
    else:
        assert_well_formed(text, chunks)


def stdlib_sample(count: int) -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    files = sorted(p for p in root.rglob("*.py") if "site-packages" not in p.parts)
    return files[:: max(1, len(files) // count)]


@pytest.mark.parametrize("max_lines", [120, 15])
def test_stdlib_files_lose_no_line(max_lines: int) -> None:
    checked = 0
    for path in stdlib_sample(200):
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a few test files are deliberately in other encodings
        chunks = chunk_source(str(path), text, max_lines=max_lines)
        assert uncovered_lines(text, chunks) == [], path
        checked += 1
    assert checked > 150


def test_prose_is_what_comments_and_docstrings_say() -> None:
    """A chunk's prose (indexed beside its code) is its docstrings and the comments that
    start a line; a "#" or "//" inside a string or after code is code."""

    def chunk(language: str, text: str) -> Chunk:
        return Chunk(1, text.count("\n") + 1, "function", "f", src(text), language)

    python = chunk(
        "python",
        """
        def split(s):
            r\"\"\"Split the string *s*
            using shell-like syntax.\"\"\"
            # keep quoted words whole
            marker = "# not a comment"  # nor this
            return s.split()
        """,
    )
    assert prose(python) == "Split the string *s* using shell-like syntax. keep quoted words whole"
    go = chunk(
        "go",
        """
        /*
         * Limit the body size
         * of an upload.
         */
        // ServeUpload answers a POST.
        func ServeUpload(w http.ResponseWriter) {
            url := "http://example.com/*" // not this
            total := 2 *
                3
        }
        """,
    )
    assert prose(go) == "Limit the body size of an upload. ServeUpload answers a POST."
    rust = chunk("rust", "/// Parse a port.\n//! crate docs\nfn parse() {}\n")
    assert prose(rust) == "Parse a port. crate docs"
    assert prose(chunk("text", "# a heading\n// maybe anything\n")) == ""
    assert prose(chunk("python", "x = 1\n")) == ""
