"""Links are untrusted: every URL parameter of every page, set to random and hostile values (NaN, ∞, huge and
negative numbers, words, brackets, long strings), opens every page without an exception — out-of-range numbers are
clamped to their widget's range with a one-line notice, the rest dropped — and the links that crashed pages before
(issue 48) now open them."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from tests.app.conftest import APP, PAGES
from viz.settings import SETTINGS

pytestmark = pytest.mark.slow
URL_KEYS = sorted(s.key for s in SETTINGS if s.url)
HOSTILE = st.one_of(
    st.sampled_from(["nan", "inf", "-inf", "-1", "0", "1e308", "1000000", "99999999999999999999", "", "[[[[", "1,2,3"]),
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=40),
)


def opened(params: dict[str, str], pages=PAGES) -> tuple[AppTest, str]:
    """The app opened from a link with ``params``, then each of ``pages``; and what its first page said."""
    at = AppTest.from_file(str(APP), default_timeout=90)
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, (params, at.exception)
    said = " ".join(w.value for w in at.warning)
    for page in pages:
        at.switch_page(page).run()
        assert not at.exception, (page, params, at.exception)
    return at, said


@pytest.mark.parametrize(
    ("params", "page", "key", "expected"),
    [
        ({"lesson_section": "Induction heads", "ind_period": "1000000"}, "viz/pages/lessons.py", "ind_period", 64),
        ({"hv_threshold": "nan"}, "viz/pages/head_view.py", "hv_threshold", 0.05),
        ({"next_temperature": "nan"}, "viz/pages/next_token.py", "next_temperature", 1.0),
        ({"pe_positions": "100000"}, "viz/pages/positional.py", "pe_positions", 8192),
    ],
)
def test_the_links_that_crashed_pages_now_open_them(params, page, key, expected):
    at, said = opened(params, [page])
    assert at.session_state[key] == expected
    assert "The link's" in said and key in said, said


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.dictionaries(st.sampled_from(URL_KEYS), HOSTILE, min_size=3, max_size=12))
def test_random_hostile_links_open_every_page(params):
    opened(params)


SAVED_KEYS = sorted(s.key for s in SETTINGS if s.saved)
JSON_HOSTILE = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**15), max_value=10**15),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=30),
    ),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(st.dictionaries(st.sampled_from(SAVED_KEYS), JSON_HOSTILE, min_size=3, max_size=12))
def test_random_hostile_session_files_open_every_page(fields):
    """A session file's settings go through load_session, then into the session as the sidebar's restore puts
    them; every page then opens."""
    import json

    from viz.session import FORMAT, load_session

    settings_, _, _ = load_session(json.dumps({"format": FORMAT, "settings": fields}))
    at = AppTest.from_file(str(APP), default_timeout=90)
    at.run()
    for key, value in settings_.items():
        at.session_state[key] = value
    for page in PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, fields, at.exception)
