"""The shared browser files (web/static/) name nothing that only one method's pages have (issue 28:
a method carries all of itself, in the browser too). A method's own ids and classes are read from
its package's task-page templates, so a method added later is covered without editing this test;
its CSS and JavaScript go into `methods/<id>/static/` (served at /m/<id>/static/)."""

from __future__ import annotations

import re
from collections import defaultdict
from importlib import resources
from pathlib import Path

import pytest

from dialeval import registry

WEB = Path(registry.__file__).parent / "web"
SHARED_FILES = sorted((WEB / "static").glob("*.css")) + sorted((WEB / "static").glob("*.js"))

_JINJA = re.compile(r"\{[{%#].*?[%}#]\}", re.S)
_ID = re.compile(r'\bid="([^"]*)"')
_CLASS = re.compile(r'\bclass="([^"]*)"')


def _names(html: str) -> set[str]:
    """`#id` and `.class` names an HTML template gives its elements (Jinja expressions left out)."""
    names = set()
    for value in _ID.findall(html):
        names |= {"#" + v for v in _JINJA.sub(" ", value).split()}
    for value in _CLASS.findall(html):
        names |= {"." + v for v in _JINJA.sub(" ", value).split()}
    return {n for n in names if not n.endswith("-")}  # "side-{{ i }}": the fixed part is no name


def _method_templates(method: registry.Method) -> list[Path]:
    if not method.templates:
        return []
    folder = Path(str(resources.files(method.templates) / "templates"))
    return sorted(folder.glob("*.html"))


def method_names() -> tuple[dict[str, set[str]], set[str]]:
    """({name: methods whose task pages give it}, names the shared pages give). A method's
    instructions template counts as shared: the shared frame shows it (start page, "How to")
    without the method's own files."""
    used: dict[str, set[str]] = defaultdict(set)
    shared = set()
    for path in (WEB / "templates").glob("*.html"):
        shared |= _names(path.read_text(encoding="utf-8"))
    for method in registry.all_methods().values():
        for path in _method_templates(method):
            names = _names(path.read_text(encoding="utf-8"))
            if path.name == method.instructions:
                shared |= names
            else:
                for name in names:
                    used[name].add(method.id)
    return used, shared


def method_only(used: dict[str, set[str]], shared: set[str]) -> dict[str, set[str]]:
    """What belongs to method pages, not to the shared files: any id of a method's page that no
    shared page has (an id is a page's own element), and any class only one method uses."""
    return {name: ids for name, ids in used.items() if name not in shared and (name.startswith("#") or len(ids) == 1)}


_CSS_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_JS_COMMENT = re.compile(r"(?m)^\s*//.*$|(?<=[;{}(),\s])//[^\n]*")
_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"|\'((?:[^\'\\\n]|\\.)*)\'')
_SELECTOR_NAME = re.compile(r"([#.])(-?[A-Za-z_][\w-]*)")
_JS_BARE = re.compile(r"(getElementById|classList\.(?:add|remove|toggle|contains))\(\s*[\"']([\w-]+)[\"']")


def named_in_css(text: str) -> set[str]:
    """The `#id` and `.class` names of a stylesheet's selectors (not of its values: `.5rem`)."""
    names = set()
    for selector in re.findall(r"([^{};]+)\{", _CSS_COMMENT.sub("", text)):
        if selector.strip().startswith("@"):
            continue
        selector = re.sub(r"\[[^\]]*\]", "", selector)  # attribute selectors' values
        names |= {kind + name for kind, name in _SELECTOR_NAME.findall(selector)}
    return names


def named_in_js(text: str) -> set[str]:
    """The ids and classes a script's code names: in selector strings, getElementById, classList,
    className (comments left out)."""
    code = _JS_COMMENT.sub("", _CSS_COMMENT.sub("", text))
    names = set()
    for m in _STRING.finditer(code):
        literal = m.group(1) if m.group(1) is not None else m.group(2)
        before = code[max(0, m.start() - 20) : m.start()]
        if re.search(r"className\s*=\s*$", before):
            names |= {"." + c for c in literal.split()}
        elif re.search(r"[#.\[]", literal) and " " not in literal.strip() or re.search(r"[#.][\w-]+[\s,>:\[]", literal):
            names |= {kind + name for kind, name in _SELECTOR_NAME.findall(re.sub(r"\[[^\]]*\]", "", literal))}
    for call, name in _JS_BARE.findall(code):
        names.add(("#" if call == "getElementById" else ".") + name)
    return names


def test_the_scanners_find_what_they_should():
    css = (
        '/* .not-this */ .a .b, #c > .d:has(input:checked) { margin:.5rem; }\n@media (max-width:1px) { .e[x=".f"] {} }'
    )
    assert named_in_css(css) == {".a", ".b", "#c", ".d", ".e"}
    js = """
      // root.querySelector("#in-a-comment")
      var x = root.querySelector("#vote-window"); var y = document.getElementById("reveal");
      el.className = "side-note other"; el.classList.add("typing");
      var z = root.querySelectorAll(".arena-round, [data-slot]"); showError(form, "The study is busy.");
      var w = form.querySelector('input[name="winner"][value="' + v + '"]');
    """
    assert named_in_js(js) == {"#vote-window", "#reveal", ".side-note", ".other", ".typing", ".arena-round"}
    used = {"#own": {"arena"}, "#two": {"arena", "pairwise_turn"}, ".one": {"arena"}, ".both": {"arena", "acute"}}
    assert set(method_only(used, {"#live"})) == {"#own", "#two", ".one"}


def test_the_methods_give_their_pages_names_of_their_own():
    used, shared = method_names()
    own = method_only(used, shared)
    # the forms each method's own script or style reaches are among what the test derives
    for name in ("#choose-form", "#rate-form", "#final-form", "#vote-window", ".likert", ".stb-layout", ".da-item"):
        assert name in own, name
    assert "#live" not in own and ".msg" not in own  # the shared chat macros' names


@pytest.mark.parametrize("path", SHARED_FILES, ids=lambda p: p.name)
def test_shared_static_files_name_no_method_only_element(path):
    used, shared = method_names()
    own = method_only(used, shared)
    text = path.read_text(encoding="utf-8")
    named = named_in_css(text) if path.suffix == ".css" else named_in_js(text)
    wrong = {name: sorted(own[name]) for name in named if name in own}
    assert not wrong, f"{path.name} names elements of one method's pages (move them to methods/<id>/static/): {wrong}"


def test_each_method_page_loads_only_static_files_that_exist():
    """Every `/m/<id>/static/<file>` a method template links is in that method's static folder."""
    for method in registry.all_methods().values():
        for path in _method_templates(method):
            for name in re.findall(r"method_static\(study\.method,\s*'([^']+)'\)", path.read_text(encoding="utf-8")):
                folder = Path(str(resources.files(method.templates) / "static"))
                assert (folder / name).is_file(), (method.id, path.name, name)
            for name in re.findall(r'href="/static/([^"]+)"|src="/static/([^"]+)"', path.read_text(encoding="utf-8")):
                shared_name = name[0] or name[1]
                assert (WEB / "static" / shared_name).is_file(), (method.id, path.name, shared_name)
