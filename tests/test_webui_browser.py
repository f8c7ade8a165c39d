"""The page in real headless Chromium, served by the gateway (by ``scripts/test.sh``: from the
installed wheel), read through its DOM and checked against the library.

Chromium is Debian's (``scripts/test.sh`` installs it), driven by ``playwright`` through
``executable_path``: no browser is downloaded. Screenshots of every mode, at laptop and phone
widths, light and dark, are saved under ``tests/artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Playwright, expect, sync_playwright

import deepseek_recipe
from deepseek_recipe.frontend import Frontend
from deepseek_recipe.gateway import GatewaySettings, create_app
from tests.gateway_support import ServerThread, serving

ROOT = Path(__file__).resolve().parents[1]
SHOTS = ROOT / "tests" / "artifacts" / "screenshots"
EXAMPLES: dict[str, Any] = json.loads((ROOT / "webui" / "examples.json").read_text(encoding="utf-8"))
LAPTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}
TOKEN_WINDOW = 2048


def shown(n: int) -> str:
    """A count as the page writes it (thin groups of three)."""
    return f"{n:,}".replace(",", " ")


def example(name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(e for e in EXAMPLES["examples"] if e["id"] == name)
    return found


def chromium() -> str:
    for name in (os.environ.get("CHROMIUM"), "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name) if name else None
        if path:
            return path
    pytest.fail("no Chromium found: bash scripts/test.sh installs Debian's chromium (or set CHROMIUM)")


@pytest.fixture(scope="session")
def playwright() -> Iterator[Playwright]:
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="session")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(executable_path=chromium())
    yield launched
    launched.close()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerThread]:
    with serving(create_app(GatewaySettings(log_requests=False))) as running:
        yield running


@pytest.fixture(scope="session")
def frontend() -> Frontend:
    return Frontend()


class Tab:
    """A page on the server that fails the test on any script error, console error or request
    that leaves the server (the page loads nothing from the network)."""

    def __init__(self, browser: Browser, server: ServerThread, **context: Any) -> None:
        self.server = server
        self.context = browser.new_context(**{"viewport": LAPTOP, **context})
        self.page: Page = self.context.new_page()
        self.problems: list[str] = []
        self.page.on("pageerror", lambda error: self.problems.append(f"script error: {error}"))
        self.page.on("console", lambda m: self.problems.append(f"console: {m.text}") if m.type == "error" else None)
        self.page.on("request", self._request)

    def _request(self, request: Any) -> None:
        if not request.url.startswith(self.server.url + "/"):
            self.problems.append(f"request off the server: {request.url}")

    def open(self, mode: str) -> Page:
        self.page.goto(f"{self.server.url}/#{mode}")
        expect(self.page.locator("body")).to_have_attribute("data-ready", "true")
        return self.page

    def close(self) -> None:
        self.context.close()
        assert self.problems == []


@pytest.fixture
def tab(browser: Browser, server: ServerThread) -> Iterator[Tab]:
    opened = Tab(browser, server)
    yield opened
    opened.close()


def pick(page: Page, panel: str, example_id: str) -> None:
    page.locator(f"#panel-{panel} .gallery [data-example='{example_id}']").click()


# -- encode ------------------------------------------------------------------------------------


def test_encode_shows_the_librarys_special_tokens_count_and_ids(tab: Tab, frontend: Frontend) -> None:
    page = tab.open("encode")
    pick(page, "encode", "tools")
    body = example("tools")["requests"]["chat"]
    prepared = frontend.prepare("chat", json.dumps(body))
    rendered = frontend.encoding(prepared.model_version).render_conversation(prepared.request.conversation)
    ids = prepared.prompt_ids

    expect(page.locator("#enc-counts [data-count=tokens]")).to_have_text(shown(len(ids)))
    expect(page.locator("#enc-counts [data-count=special_tokens]")).to_have_text(shown(len(rendered.special_ranges)))
    marks = page.locator("#enc-viewer pre.prompt mark.special")
    assert marks.all_inner_texts() == [rendered.prompt[a:b] for a, b in rendered.special_ranges]
    assert page.locator("#enc-viewer pre.prompt").inner_text() == rendered.prompt

    page.locator("#enc-viewer [data-mode=tokens]").click()
    chips = page.locator("#enc-viewer .tok")
    expect(chips).to_have_count(len(ids))
    assert [int(i) for i in chips.evaluate_all("cs => cs.map(c => c.dataset.id)")] == ids
    special = page.locator("#enc-viewer .tok.k-special").evaluate_all("cs => cs.map(c => c.textContent)")
    assert special == [rendered.prompt[a:b] for a, b in rendered.special_ranges]

    # Hover shows a token's id; so does focus, moved by the arrow keys, with its bytes.
    chips.nth(5).hover()
    expect(page.locator("#enc-viewer .token-detail .d-id")).to_have_text(f"id {ids[5]}")
    chips.first.focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#enc-viewer .tok[data-i='1']")).to_be_focused()
    detail = page.locator("#enc-viewer .token-detail")
    expect(detail.locator(".d-id")).to_have_text(f"id {ids[1]}")
    token_bytes = frontend.tokenizer.token_bytes(ids[1]) or b""
    expect(detail.locator(".d-bytes")).to_have_text("bytes " + " ".join(f"{b:02x}" for b in token_bytes))


def test_the_injection_example_shows_no_real_special_token_for_the_users_text(tab: Tab, frontend: Frontend) -> None:
    page = tab.open("encode")
    pick(page, "encode", "injection-user")
    body = example("injection-user")["requests"]["chat"]
    typed = body["messages"][-1]["content"]
    prepared = frontend.prepare("chat", json.dumps(body))
    rendered = frontend.encoding(prepared.model_version).render_conversation(prepared.request.conversation)
    expect(page.locator("#enc-counts [data-count=tokens]")).to_have_text(shown(len(prepared.prompt_ids)))

    specials = page.locator("#enc-viewer pre.prompt mark.special").all_inner_texts()
    assert specials == [rendered.prompt[a:b] for a, b in rendered.special_ranges]
    assert specials == ["<｜begin▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>"]
    lookalikes = page.locator("#enc-viewer pre.prompt .lookalike").all_inner_texts()
    assert lookalikes == ["<｜end▁of▁sentence｜>", "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>"]
    # The user's text, read back from the DOM between the real <｜User｜> and <｜Assistant｜>,
    # holds the typed spellings as plain text and no special mark.
    between = page.locator("#enc-viewer pre.prompt").evaluate(
        """pre => {
            const marks = [...pre.querySelectorAll('mark.special')];
            const range = document.createRange();
            range.setStartAfter(marks[1]);
            range.setEndBefore(marks[2]);
            const box = document.createElement('div');
            box.append(range.cloneContents());
            return {text: box.textContent, marks: box.querySelectorAll('mark').length};
        }"""
    )
    assert between == {"text": typed, "marks": 0}
    # Tokens: only the template's four are special; the typed ones are several plain tokens each.
    page.locator("#enc-viewer [data-mode=tokens]").click()
    expect(page.locator("#enc-viewer .tok.k-special")).to_have_count(4)
    typed_tokens = page.locator("#enc-viewer .tok.k-lookalike").evaluate_all("cs => cs.map(c => Number(c.dataset.id))")
    assert len(typed_tokens) > 5 and not set(typed_tokens) & {prepared.prompt_ids[i] for i in (1, 2, 3)}


def test_a_v41_image_request_renders_and_shows_the_clients_error(tab: Tab, server: ServerThread) -> None:
    page = tab.open("encode")
    pick(page, "encode", "image")
    body = example("image")["requests"]["chat"]
    direct = httpx.post(server.url + "/v1/chat/completions", json=body, timeout=30)
    assert direct.status_code == 400
    error = page.locator("#enc-status .client-error")
    expect(error.locator(".status")).to_contain_text(f"400 invalid_request_error: {direct.json()['error']['message']}")
    assert json.loads(error.locator("pre.raw").inner_text()) == direct.json()
    assert error.locator("pre.raw").inner_text() == direct.text
    expect(page.locator("#enc-viewer pre.prompt mark.special", has_text="<｜image｜>")).to_have_count(1)
    expect(page.locator("#enc-model")).to_have_value("DeepSeek-V4.1-Flash")


def test_a_300k_token_conversation_stays_windowed(tab: Tab, frontend: Frontend) -> None:
    messages: list[dict[str, str]] = []
    for i in range(420):
        paragraph = f"The agent read file number {i} and found these lines about the build and its tests. " * 40
        messages += [{"role": "user", "content": paragraph}, {"role": "assistant", "content": f"Noted {i}."}]
    messages.append({"role": "user", "content": "Summarise."})
    body = json.dumps({"model": "DeepSeek-V4-Pro", "messages": messages})
    total = len(frontend.prepare("chat", body).prompt_ids)
    assert total >= 300_000

    page = tab.open("encode")
    expect(page.locator("#enc-counts [data-count=tokens]")).not_to_have_text("—")
    page.locator("#enc-body").evaluate("(el, text) => { el.value = text; el.dispatchEvent(new Event('input')); }", body)
    page.locator("#enc-run").click()
    expect(page.locator("#enc-counts [data-count=tokens]")).to_have_text(shown(total), timeout=60_000)
    # The prompt view holds one window of tokens, not the whole prompt.
    assert len(page.locator("#enc-viewer pre.prompt").inner_text()) < 100_000
    page.locator("#enc-viewer [data-mode=tokens]").click()
    expect(page.locator("#enc-viewer .tok")).to_have_count(TOKEN_WINDOW)
    where = page.locator("#enc-viewer .where")
    expect(where).to_have_text(f"tokens 0–{shown(TOKEN_WINDOW - 1)} of {shown(total)}")
    page.get_by_role("button", name="Next window").first.click()
    expect(where).to_have_text(f"tokens {shown(TOKEN_WINDOW)}–{shown(2 * TOKEN_WINDOW - 1)} of {shown(total)}")
    jump = page.locator("#enc-viewer input[aria-label='Go to token']")
    jump.fill(str(total - 1))
    jump.press("Enter")
    expect(page.locator(f"#enc-viewer .tok[data-i='{total - 1}']")).to_be_focused()
    assert page.locator("#enc-viewer .tok").count() <= TOKEN_WINDOW


# -- decode ------------------------------------------------------------------------------------


def test_decode_shows_the_parsed_tool_call_and_replays_what_was_held_back(tab: Tab) -> None:
    page = tab.open("decode")
    pick(page, "decode", "tools")
    call = page.locator("#dec-parsed .tool-call")
    expect(call).to_have_count(1)
    expect(call.locator(".name")).to_have_text("get_weather")
    assert json.loads(call.locator("pre.args").inner_text()) == {"city": "Berlin", "unit": "celsius"}
    expect(page.locator("#dec-parsed .k-reasoning .body")).to_have_text("Berlin needs one more get_weather call.")

    for protocol in ("responses", "messages"):
        page.locator("#dec-protocol").select_option(protocol)
        expect(page.locator("#dec-status")).to_contain_text(
            {"responses": "Responses", "messages": "Messages"}[protocol]
        )
        assert json.loads(page.locator("#dec-parsed .tool-call pre.args").inner_text()) == {
            "city": "Berlin",
            "unit": "celsius",
        }

    # Replay, by keyboard, to the chunk that ends in "</t": the decoder holds it back.
    output = example("tools")["output"]["text"]
    size = int(page.locator("#dec-chunk").input_value())
    step = output.index("</think>") // size
    assert output[step * size : step * size + size].startswith("</")
    slider = page.locator("#dec-step")
    slider.focus()
    for _ in range(step):
        page.keyboard.press("ArrowRight")
    expect(page.locator("#dec-replay .where")).to_have_text(f"chunk {step + 1} of {-(-len(output) // size)}")
    expect(page.locator("#dec-replay mark.cut")).to_have_text(output[step * size : step * size + size])
    expect(page.locator("#dec-replay .texts.held .body")).to_have_text(output[step * size : (step + 1) * size])


def test_decode_token_ids(tab: Tab, frontend: Frontend) -> None:
    page = tab.open("decode")
    pick(page, "decode", "plain")
    page.locator("#dec-convert").click()
    ids = frontend.tokenizer.encode(example("plain")["output"]["text"])
    expect(page.locator("#dec-output")).to_have_value(" ".join(map(str, ids)))
    expect(page.locator("#dec-mode-ids")).to_be_checked()
    page.locator("#dec-run").click()
    expect(page.locator("#dec-status")).to_contain_text(f"{len(ids)} chunks of 1 token")
    expect(page.locator("#dec-parsed .k-content .body")).to_have_text("The capital of France is **Paris**.")


# -- compare and cache -------------------------------------------------------------------------


def test_compare_checks_the_ids_are_identical(tab: Tab, frontend: Frontend) -> None:
    page = tab.open("compare")
    expect(page.locator("#cmp-verdict [data-identical]")).to_have_attribute("data-identical", "true")
    tokens = len(frontend.prepare("chat", json.dumps(example("tools")["requests"]["chat"])).prompt_ids)
    expect(page.locator("#cmp-verdict")).to_contain_text(f"the same {shown(tokens)} tokens")
    edited = page.locator("#cmp-messages").input_value().replace("2025-06-01", "2025-06-02")
    page.locator("#cmp-messages").fill(edited)
    page.locator("#cmp-run").click()
    expect(page.locator("#cmp-verdict [data-identical]")).to_have_attribute("data-identical", "false")
    expect(page.locator("#cmp-verdict")).to_contain_text("The ids differ from token")


def test_the_cache_view_reports_the_shared_blocks_the_library_computes(tab: Tab, frontend: Frontend) -> None:
    page = tab.open("cache")
    for name in ("next-turn", "system-changed", "tools-reordered"):
        pick(page, "cache", name)
        entry = next(e for e in EXAMPLES["cache"] if e["id"] == name)
        a = frontend.prepare("chat", json.dumps(entry["a"]["chat"])).prompt_ids
        b = frontend.prepare("chat", json.dumps(entry["b"]["chat"])).prompt_ids
        common = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        expect(page.locator("#cache-summary [data-shared-blocks]")).to_have_attribute(
            "data-shared-blocks", str(common // 128)
        )
        expect(page.locator("#cache-divergence [data-divergence]")).to_have_attribute("data-divergence", str(common))
        expect(page.locator("#cache-blocks .block.s-shared[role=listitem]")).to_have_count(common // 128)
    page.locator("#cache-block-size").fill("16")
    page.locator("#cache-block-size").press("Enter")
    page.locator("#cache-run").click()
    expect(page.locator("#cache-summary [data-shared-blocks]")).to_have_attribute(
        "data-shared-blocks", str(common // 16)
    )


# -- the whole page ----------------------------------------------------------------------------


def test_tabs_by_keyboard(tab: Tab) -> None:
    page = tab.open("encode")
    page.locator("#tab-encode").focus()
    page.keyboard.press("ArrowRight")
    expect(page.locator("#tab-decode")).to_have_attribute("aria-selected", "true")
    expect(page.locator("#panel-decode")).to_be_visible()
    expect(page.locator("#panel-encode")).to_be_hidden()
    page.keyboard.press("End")
    expect(page.locator("#tab-cache")).to_be_focused()
    assert page.evaluate("location.hash") == "#cache"


def test_a_gateway_with_keys_asks_for_one(browser: Browser) -> None:
    settings = GatewaySettings(log_requests=False, api_keys=["sk-page"])  # type: ignore[list-item]
    with serving(create_app(settings)) as server:
        tab = Tab(browser, server)
        tab.page.goto(server.url + "/")
        dialog = tab.page.locator("#key-dialog")
        expect(dialog).to_be_visible()
        tab.page.locator("#key-input").fill("sk-page")
        tab.page.get_by_role("button", name="Save").click()
        expect(tab.page.locator("body")).to_have_attribute("data-ready", "true")
        expect(tab.page.locator("#enc-counts [data-count=tokens]")).not_to_have_text("—")
        # The 401s before the key was given are the only console errors.
        tab.problems = [p for p in tab.problems if "401" not in p]
        tab.close()


@pytest.mark.parametrize(
    ("size", "viewport", "theme"),
    [("laptop", LAPTOP, "light"), ("laptop", LAPTOP, "dark"), ("phone", PHONE, "light"), ("phone", PHONE, "dark")],
)
def test_screenshots_of_every_mode(
    browser: Browser, server: ServerThread, size: str, viewport: dict[str, int], theme: str
) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    tab = Tab(browser, server, viewport=viewport, color_scheme="light")
    page = tab.open("encode")
    # The theme switch cycles auto → light → dark.
    clicks = {"light": 1, "dark": 2}[theme]
    for _ in range(clicks):
        page.locator("#theme").click()
    assert page.evaluate("document.documentElement.dataset.theme") == theme
    ready = {
        "encode": "#enc-counts [data-count=tokens]",
        "decode": "#dec-parsed .tool-call",
        "compare": "#cmp-verdict [data-identical]",
        "cache": "#cache-summary [data-shared-blocks]",
    }
    for mode, selector in ready.items():
        page.locator(f"#tab-{mode}").click()
        if mode == "encode":
            pick(page, "encode", "injection-user")
        expect(page.locator(selector).first).to_be_visible()
        expect(page.locator("[aria-busy=true]")).to_have_count(0)
        if mode == "decode":  # show the chunk whose "</t" the decoder holds back
            page.locator("#dec-step").focus()
            for _ in range(example("tools")["output"]["text"].index("</think>") // 3):
                page.keyboard.press("ArrowRight")
            expect(page.locator("#dec-replay .texts.held .body")).to_have_text("</t")
            page.locator("#dec-step").blur()
        # Nothing wider than the screen: no sideways scrolling at phone width.
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=str(SHOTS / f"{mode}-{size}-{theme}.png"), full_page=True)
    tab.close()


def test_served_from_the_installed_package() -> None:
    """``scripts/test.sh`` runs the suite against the installed wheel: the page must come from it."""
    package = Path(deepseek_recipe.__file__).resolve().parent
    assert (package / "webui" / "index.html").is_file()
    if os.environ.get("DEEPSEEK_RECIPE_TEST_INSTALLED") == "1":
        # The virtualenv may live inside the checkout; what must not be used is the source tree.
        assert package != ROOT / "python" / "deepseek_recipe", f"the package under test is the checkout's: {package}"
