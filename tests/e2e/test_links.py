"""A link handed to students opens, in a fresh browser, the lesson section and the switches the lecturer had."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from scripts.browser import wait_idle
from tests.e2e.conftest import fresh_tab

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_link_opens_the_lesson_section_and_the_permutation_switch(server, browser):
    page = fresh_tab(browser, server, 1400, 1000)
    page.goto(f"{server}/lessons?{urlencode({'lesson_section': 'Why √d_k'})}")
    wait_idle(page)
    assert page.get_by_role("radio", name="Why √d_k").is_checked()
    page.get_by_text("softmax gradient", exact=False).first.wait_for(timeout=30_000)
    query = urlencode({"pe_section": "Permutation lab", "perm_positions": "1", "perm_seed": "3"})
    page.goto(f"{server}/positional?{query}")
    wait_idle(page)
    assert page.get_by_role("radio", name="Permutation lab").is_checked()
    assert page.get_by_label("Positional encoding on").is_checked()
    page.close()
