"""The Generate page in a real browser: it draws, and the arrow keys on the focused step slider move the step."""

import pytest

from conftest import chromium, settle

pytestmark = pytest.mark.browser
STEP = 'input[aria-label="Step (←/→ when the slider is focused)"]'


def test_the_arrow_keys_step_through_the_run(server):
    with chromium() as browser:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.goto(f"{server}/Generate?gen_n=6")
        page.locator("h1").first.wait_for(timeout=120_000)
        settle(page, timeout=180_000)
        assert page.locator("[data-testid=stException]").count() == 0
        caption = page.locator("text=/Step \\d of 6 read/").first
        assert caption.inner_text().startswith("Step 1 of 6 read")
        slider = page.locator(STEP)
        slider.focus()
        for expected in (2, 3):
            page.keyboard.press("ArrowRight")
            settle(page)
            assert caption.inner_text().startswith(f"Step {expected} of 6 read")
        page.keyboard.press("ArrowLeft")
        settle(page)
        assert caption.inner_text().startswith("Step 2 of 6 read") and "step=1" in page.url
        assert slider.get_attribute("aria-valuetext").startswith("2 · ")
