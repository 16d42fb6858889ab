"""The web page in a real browser: Playwright driving Debian's chromium against `gitrag serve` on loopback.

Set GITRAG_WEB_SCREENSHOT=docs/web.png to refresh the README's screenshot.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from artifacts.graphmap import PRESETS
from indexer.build import build_bundle
from query.server.webpage import PAGE_CSP
from tests.conftest import RepoBuilder
from tests.query.test_graph import HOLP, KOVAC_1, VERESOVA
from tests.query.test_server import SEARCH_KEY

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
BASE_URL = "https://wiki.example.org/"
HOLP_PATH = "pages/students/2016/jan_holp/README.md"
VERESOVA_PATH = "pages/students/2017/ivana_veresova/README.md"


def _browser_path() -> str:
    if CHROMIUM:
        return CHROMIUM
    if os.environ.get("CI"):
        pytest.fail("chromium is missing in CI: scripts/install.sh should have installed it (apt-get install chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium); Playwright's own browser download is not used")


@pytest.fixture
def wiki(repo: RepoBuilder, tmp_path: Path, hash_embedder) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """A thesis wiki in two commits; the second deletes Ivana Verešová's page."""
    repo.write("graph-schema.yaml", PRESETS["thesis-wiki"])
    repo.write(HOLP_PATH, HOLP)
    repo.write("pages/students/2015/martin_kovac/README.md", KOVAC_1)
    repo.write(VERESOVA_PATH, VERESOVA)
    c1 = repo.commit("Add three students")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    repo.remove(VERESOVA_PATH)
    c2 = repo.commit("Remove Ivana Verešová's page")
    build_bundle(repo.path, tmp_path / "store", embedder=hash_embedder, branch="main")
    return {"c1": c1, "c2": c2, "store": str(tmp_path / "store")}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(wiki: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """`gitrag serve` in a subprocess with a search key and a base URL; yields its http://127.0.0.1:PORT."""
    yield from _serve(wiki, tmp_path, ["--base-url", BASE_URL])


@pytest.fixture
def plain_server(wiki: dict[str, str], tmp_path: Path) -> Iterator[str]:
    """The same server without ``--base-url`` (sources have no URL to link to)."""
    yield from _serve(wiki, tmp_path, [])


def _serve(wiki: dict[str, str], tmp_path: Path, extra: list[str]) -> Iterator[str]:
    config = tmp_path / "server.toml"
    config.write_text(f'search_key = "{SEARCH_KEY}"\n', encoding="utf-8")
    port = _free_port()
    gitrag = shutil.which("gitrag", path=str(Path(sys.executable).parent))
    assert gitrag, "the gitrag entry point is not installed in this environment"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen([gitrag, "serve", "--store", wiki["store"], "--host", "127.0.0.1", "--port", str(port),
                             *extra, "--config", str(config)], env=env, stdout=log, stderr=log)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(base + "/health", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("gitrag serve did not start: " + (tmp_path / "server.log").read_text())
            time.sleep(0.2)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _has_answer_route(base: str) -> bool:
    with urllib.request.urlopen(base + "/openapi.json", timeout=5) as resp:
        return "/answer" in json.load(resp)["paths"]


def test_search_follow_a_link_and_time_travel_in_a_browser(server: str, wiki: dict[str, str], tmp_path: Path) -> None:
    from playwright.sync_api import expect, sync_playwright

    executable = _browser_path()
    expect.set_options(timeout=30_000)  # the first graph or historical query opens a database; CI machines are busy
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.on("console", lambda m: errors.append(f"{m.text} ({m.location.get('url')})") if m.type == "error"
                    else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            response = page.goto(server + "/")
            assert response is not None and response.ok
            assert response.headers["content-security-policy"] == PAGE_CSP
            assert response.headers["x-frame-options"] == "DENY"

            # The key is typed once and kept for the tab; then the served commit is always visible (before
            # the key, a server whose /health hides details without one only lets the page say it is ready).
            expect(page.locator("#keybox")).to_be_visible()
            expect(page.locator("#served")).not_to_have_text("Connecting…")
            page.fill("#key", SEARCH_KEY)
            page.press("#key", "Enter")
            expect(page.locator("#keybox")).to_be_hidden()
            expect(page.locator("#served-commit")).to_have_text(wiki["c2"][:7])
            assert page.evaluate("sessionStorage.getItem('gitrag.apiKey')") == SEARCH_KEY
            expect(page.locator("#at option")).to_have_count(2)  # the served commit + the older one

            # Keyboard only: "/" focuses the search box, Enter submits.
            expect(page.locator("#q")).to_be_focused()  # after the key, the page returns focus to the search box
            page.evaluate("document.activeElement.blur()")
            page.keyboard.press("/")
            expect(page.locator("#q")).to_be_focused()
            page.keyboard.type("Prepis súdnych nahrávok")
            expect(page.locator("#q")).to_have_value("Prepis súdnych nahrávok")
            page.keyboard.press("Enter")
            first = page.locator("#results > li").first
            expect(first.locator("h2")).to_have_text("Ján Holp")
            link = first.locator("a.result-link")
            assert link.get_attribute("href") == BASE_URL + HOLP_PATH
            expect(first.locator("mark").first).to_be_visible()
            assert "prepis" in first.locator("mark").first.inner_text().lower()
            expect(page.locator(".asof")).to_contain_text(wiki["c2"][:7])
            shot = tmp_path / "web.png"
            page.screenshot(path=str(shot), full_page=True)

            # The deleted page is not found in the served commit ...
            page.fill("#q", "Ivana Verešová Detekcia prejavov")
            page.press("#q", "Enter")
            expect(page.locator("#status")).to_contain_text("result")
            paths = page.locator("#results .path code").all_inner_texts()
            assert VERESOVA_PATH not in paths
            # ... and appears as of the older commit.
            page.select_option("#at", wiki["c1"])
            expect(page.locator(".asof.older")).to_contain_text(wiki["c1"][:7])
            expect(page.locator("#results > li").first.locator("h2")).to_have_text("Ivana Verešová")
            assert page.locator("#results .path code").first.inner_text() == VERESOVA_PATH
            expect(page.locator("#served-commit")).to_have_text(wiki["c2"][:7])  # still shows the served commit

            # Ask mode.
            page.select_option("#at", "")
            page.check("input[name=mode][value=ask]")
            expect(page.locator("#go")).to_have_text("Ask")
            page.fill("#q", "Aké práce má Ján Holp?")
            page.press("#q", "Enter")
            table = page.locator("table").first  # a graph answer is shown as a table of works
            expect(table.locator("caption")).to_have_text("Works of Ján Holp")
            expect(table).to_contain_text("Prepis súdnych nahrávok")
            expect(table).to_contain_text("2019")
            expect(table).to_contain_text("title not recorded")  # the diploma thesis has no title in the page
            expect(page.locator(".sources a").first).to_have_attribute("href", BASE_URL + HOLP_PATH)
            if _has_answer_route(server):  # the checked answer, with citations that jump to their source
                expect(page.locator("#answer")).to_contain_text("Prepis súdnych nahrávok")
                cite = page.locator("#answer a.cite").first
                target = cite.get_attribute("href")
                assert target == "#src-S1"
                cite.click()
                assert page.evaluate("location.hash") == target
                expect(page.locator(target)).to_be_in_viewport()
                expect(page.locator(target)).to_contain_text("Ján Holp")
            else:  # without /answer the page says so and shows the knowledge graph's answer
                expect(page.locator("#output")).to_contain_text("This server has no /answer endpoint")
            page.screenshot(path=str(tmp_path / "web-ask.png"), full_page=True)

            page.fill("#q", "Koľko študentov má bakalársku prácu v roku 2018?")
            page.press("#q", "Enter")
            expect(page.locator(".count")).to_contain_text("Count: 1")
            expect(page.locator("ul.names")).to_contain_text("Martin Kováč")

            page.fill("#q", "Aké je počasie v Košiciach?")
            page.press("#q", "Enter")
            expect(page.locator(".noanswer")).to_be_visible()
            expect(page.locator("#status")).to_have_text("No answer.")

            # Phone width: nothing wider than the screen.
            page.set_viewport_size({"width": 390, "height": 844})
            page.check("input[name=mode][value=search]")
            page.fill("#q", "Prepis súdnych nahrávok")
            page.press("#q", "Enter")
            expect(page.locator("#results > li").first.locator("h2")).to_have_text("Ján Holp")
            assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")

            # A server that shows /health's details only with a key: the page names the served commit
            # from /bundles once the key is typed (a new tab: session storage starts empty).
            tab = browser.new_page()
            hidden = json.dumps({"status": "ok", "ready": True, "reason": None, "auth": "api_keys"})
            tab.route("**/health", lambda r: r.fulfill(status=200, content_type="application/json", body=hidden))
            tab.goto(server + "/")
            expect(tab.locator("#served")).to_have_text("An index is served.")
            tab.fill("#key", SEARCH_KEY)
            tab.press("#key", "Enter")
            expect(tab.locator("#served-commit")).to_have_text(wiki["c2"][:7])
            tab.close()

            # Chromium logs every 4xx fetch; a 401 before the key and /answer's 404 (no such route) are expected.
            unexpected = [e for e in errors if not e.endswith(("/answer)", "/bundles)"))]
            assert not unexpected, errors
        finally:
            browser.close()
    target = os.environ.get("GITRAG_WEB_SCREENSHOT")
    if target:
        shutil.copyfile(shot, target)
        if (tmp_path / "web-ask.png").exists():
            shutil.copyfile(tmp_path / "web-ask.png", Path(target).with_name(Path(target).stem + "-ask.png"))


def test_sources_without_base_url_open_the_page_of_their_commit(plain_server: str, wiki: dict[str, str]) -> None:
    from playwright.sync_api import expect, sync_playwright

    executable = _browser_path()
    expect.set_options(timeout=30_000)
    errors: list[str] = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(plain_server + "/")
            page.fill("#key", SEARCH_KEY)
            page.press("#key", "Enter")
            expect(page.locator("#served-commit")).to_have_text(wiki["c2"][:7])
            page.fill("#q", "Prepis súdnych nahrávok")
            page.press("#q", "Enter")
            first = page.locator("#results > li").first
            expect(first.locator("h2")).to_have_text("Ján Holp")
            snippet = first.locator(".snippet")
            expect(snippet.locator("mark").first).to_be_visible()
            assert "**" not in snippet.inner_text() and "](" not in snippet.inner_text()
            first.locator("a.result-link").click()  # no --base-url: the page as the bundle holds it
            doc = page.locator("#document")
            expect(doc.locator("h2")).to_have_text("Ján Holp")
            expect(doc.locator("pre.markdown")).to_contain_text("Prepis súdnych nahrávok")
            expect(doc).to_contain_text(wiki["c2"][:7])
            doc.locator("button.back").click()
            expect(page.locator("#results > li").first.locator("h2")).to_have_text("Ján Holp")
            # a page deleted since: found as of the older commit, and shown as that commit holds it
            page.select_option("#at", wiki["c1"])
            page.fill("#q", "Ivana Verešová Detekcia prejavov")
            page.press("#q", "Enter")
            older = page.locator("#results > li").first
            expect(older.locator("h2")).to_have_text("Ivana Verešová")
            older.locator("a.result-link").click()
            expect(page.locator("#document")).to_contain_text(wiki["c1"][:7])
            expect(page.locator("#document pre.markdown")).to_contain_text("Detekcia")
        finally:
            browser.close()
    assert not errors, errors
