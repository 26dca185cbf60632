"""Every word the user can see, in both languages: no key used but missing, none defined but never used."""
import ast
import string
from pathlib import Path

import pytest

from model.errors import MESSAGES
from model.decoding.records import FATES, STAGES_TRANSFORMERS
from ui.strings import PAGE
from viz.i18n import WORDS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
TABLES = {"PAGE": PAGE, "WORDS": WORDS, "MESSAGES": MESSAGES}
LOOKUPS = {"t", "Refusal", "SessionError", "SessionBusy", "SessionExpired", "LessonError", "message"}  # first argument: a key
# Keys built from a value at run time, and the values they are built from.
FAMILIES = {f"fate_{f}" for f in FATES} | {f"stage_{s}" for s in STAGES_TRANSFORMERS} | {
    f"calc_{kind}" for kind in ("mha", "gqa", "mqa")}


def sources():
    files = [ROOT / "app.py", *sorted((ROOT / "ui").rglob("*.py")), *sorted((ROOT / "viz").rglob("*.py")),
             *sorted((ROOT / "model").rglob("*.py"))]
    return {path: ast.parse(path.read_text(encoding="utf-8")) for path in files}


def looked_up(trees) -> set[str]:
    """Keys passed to a lookup as a literal, registered as a label, or named as a view's title."""
    keys = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                args = [a for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                if name in LOOKUPS and node.args and node.args[0] in args:
                    keys.add(node.args[0].value)
                if name == "add" and len(node.args) >= 2 and node.args[1] in args:  # labels.add(component, key)
                    keys.add(node.args[1].value)
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Tuple):  # tab, title = "kv", "tab_kv"
                names = [getattr(t, "id", None) for t in getattr(node.targets[0], "elts", [])]
                if "title" in names:
                    keys.add(node.value.elts[names.index("title")].value)
    return keys


def built_keys(trees) -> list[str]:
    """The literal start of every key built at run time (t(f"calc_{kind}")): each must be a declared family."""
    starts = []
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) \
                    in LOOKUPS and node.args and isinstance(node.args[0], ast.JoinedStr):
                first = node.args[0].values[0]
                starts.append(first.value if isinstance(first, ast.Constant) else "")
    return starts


def literals(trees, skip) -> set[str]:
    """Every string literal outside the tables themselves."""
    found = set()
    for path, tree in trees.items():
        if path.name in skip:
            continue
        found |= {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return found


def fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_every_key_has_both_languages_with_the_same_placeholders():
    for table_name, table in TABLES.items():
        for key, (en, zh) in table.items():
            assert en.strip() and zh.strip(), (table_name, key)
            assert fields(en) == fields(zh), (table_name, key, fields(en), fields(zh))


def test_no_key_is_in_two_tables():
    names = list(TABLES)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            assert not set(TABLES[a]) & set(TABLES[b]), (a, b, set(TABLES[a]) & set(TABLES[b]))


def test_every_key_used_is_defined():
    defined = set(PAGE) | set(WORDS) | set(MESSAGES)
    missing = looked_up(sources()) - defined
    assert not missing, f"used but defined in no table: {sorted(missing)}"


def test_every_key_built_at_run_time_is_a_declared_family():
    """A key made from a value (t(f"{key}_panel")) cannot be checked: it must come from a family listed here."""
    undeclared = [start for start in built_keys(sources()) if not any(k.startswith(start) for k in FAMILIES) or not start]
    assert not undeclared, f"keys built at run time from no declared family: {undeclared}"


def test_every_key_defined_is_used():
    trees = sources()
    used = literals(trees, skip={"strings.py", "i18n.py", "errors.py"}) | FAMILIES
    unused = (set(PAGE) | set(WORDS) | set(MESSAGES)) - used
    assert not unused, f"defined but never used: {sorted(unused)}"


def test_the_scan_finds_a_missing_key(tmp_path):
    """The check above can fail: a lookup of a key no table has is found."""
    tree = ast.parse('t("no_such_key_anywhere", lang)\nlabels.add(box, "another_missing_key")')
    assert looked_up({tmp_path / "x.py": tree}) == {"no_such_key_anywhere", "another_missing_key"}
    assert built_keys({tmp_path / "y.py": ast.parse('t(f"{key}_panel", lang)')}) == [""]


def test_no_key_is_written_twice_in_its_table():
    """A dict literal keeps the last of two equal keys, silently: the first text would never be seen."""
    for path in (ROOT / "ui" / "strings.py", ROOT / "viz" / "i18n.py", ROOT / "model" / "errors.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
                assert len(keys) == len(set(keys)), (path.name, sorted({k for k in keys if keys.count(k) > 1}))
