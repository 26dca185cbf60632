"""Every refusal has a key with its text in English and Chinese, and the keys in the code and in MESSAGES agree."""
import re
import string
from pathlib import Path

import pytest

from model.errors import MESSAGES, SessionBusy, SessionError, SessionExpired, message

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1]
RAISED = re.compile(r"\b(SessionError|SessionBusy|SessionExpired|ModelLoadError|LessonError)\(\s*([^)\s,]*)")
CJK = re.compile(r"[\u4e00-\u9fff]")


def placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name is not None}


def sources(*globs: str) -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for g in globs for p in sorted(ROOT.glob(g)) if p.is_file()}


def refusals_in_model() -> list[tuple[Path, str]]:
    """(file, first argument) of every SessionError / SessionBusy / SessionExpired / ModelLoadError / LessonError made
    in model/."""
    found = []
    for path, text in sources("model/**/*.py").items():
        for line in text.splitlines():
            if not line.lstrip().startswith("class "):  # class SessionBusy(SessionError): a base, not a call
                found += [(path, arg) for _, arg in RAISED.findall(line)]
    return found


@pytest.mark.parametrize("key", sorted(MESSAGES))
def test_every_message_has_both_languages_with_the_same_placeholders(key):
    en, zh = MESSAGES[key]
    assert en.strip() and zh.strip() and CJK.search(zh) and en != zh
    assert placeholders(en) == placeholders(zh), key


def test_the_scan_finds_the_refusals_it_checks():
    found = refusals_in_model()
    assert len(found) > 30 and {p.name for p, _ in found} >= {"session.py", "sessions.py", "trace.py", "records.py",
                                                                 "sampling.py", "loading.py", "kv.py"}


def test_every_refusal_in_model_names_a_key_of_messages():
    """A key written out must be in MESSAGES; a text (an f-string, a sentence) in its place is a refusal not moved.

    A name (err.key, a helper's `key` argument) is passed on from elsewhere: the key it holds is written out there.
    """
    for path, arg in refusals_in_model():
        if re.fullmatch(r"[A-Za-z_][\w.]*", arg):
            continue
        assert re.fullmatch(r'"\w+"', arg), f"{path.name}: {arg!r} is not a key (a refusal takes a MESSAGES key)"
        assert arg.strip('"') in MESSAGES, f"{path.name}: no message {arg}"


def test_every_key_is_used_somewhere():
    code = "\n".join(text for path, text in sources("model/**/*.py", "app.py", "ui/**/*.py").items()
                     if path.name != "errors.py")
    unused = [key for key in MESSAGES if f'"{key}"' not in code]
    assert not unused, f"keys no code uses (remove them): {unused}"


def test_a_refusal_reads_in_either_language_and_its_english_is_its_str():
    err = SessionError("prompt_too_long", n=5000, limit=4000)
    assert str(err) == "The prompt is too long: 5000 characters (at most 4000)." == err.text("en")
    assert err.text("zh") == "提示词太长：5000 个字符（最多 4000 个）。"
    assert isinstance(err, ValueError) and err.key == "prompt_too_long" and err.params == {"n": 5000, "limit": 4000}
    assert issubclass(SessionBusy, SessionError) and issubclass(SessionExpired, SessionError)


def test_a_refusal_given_as_a_parameter_is_shown_in_the_same_language():
    inner = SessionError("top_k_range", value=-1)
    outer = SessionError("trace_step_damaged", step=3, reason=inner)
    assert str(outer) == "The trace is damaged at step 3: Setting out of range: top_k must be a whole number >= 0 (0 = off), got -1."
    assert outer.text("zh") == f"记录文件在第 3 步已损坏：{inner.text('zh')}。"


def test_an_unknown_key_is_refused_at_once():
    with pytest.raises(KeyError, match="MESSAGES"):
        SessionError("no_such_key")


def test_the_old_import_paths_still_work():
    from model.decoding.session import SessionBusy as busy, SessionError as error
    from model.serving.sessions import SessionExpired as expired

    assert (busy, error, expired) == (SessionBusy, SessionError, SessionExpired)
    assert message("session_expired", "en", minutes=30) == (
        "Your session was idle for over 30 minutes and was closed; press Start to begin again.")
