"""The task sites without a browser: per-session state, sold-out refusal, the form's confirm step."""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from browser_env.sites.server import COOKIE, SiteServer
from browser_env.tasks import TASKS, get_task, task_rows


@pytest.fixture(scope="module")
def server():
    with SiteServer() as s:
        yield s


def call(server, sid, method, path, body=b""):
    page, _ = server.dispatch(method, path, body, f"{COOKIE}={sid}")
    return page


def test_cart_state_is_per_session(server):
    a, b = server.new_session(), server.new_session()
    assert call(server, a, "POST", "/shop/cart/add", b"id=h1&qty=2").status == 303
    assert server.state(a, "shop")["cart"] == {"h1": 2}
    assert server.state(b, "shop")["cart"] == {}
    assert "Your cart is empty" in call(server, b, "GET", "/shop/cart").body


def test_shop_search_filter_sort(server):
    sid = server.new_session()
    body = call(server, sid, "GET", "/shop/?q=wireless+mouse&sort=price_asc").body
    assert "3 products" in body
    assert body.index("Wireless Travel Mouse") < body.index("Wireless Mouse Basic") < body.index("Wireless Mouse Pro")
    assert "1 products" in call(server, sid, "GET", "/shop/?category=mice&max_price=10").body


def test_sold_out_event_refuses_and_orders_nothing(server):
    sid = server.new_session()
    assert "SOLD OUT" in call(server, sid, "GET", "/tickets/event/jazz").body
    page = call(server, sid, "POST", "/tickets/buy", b"event=jazz&qty=2")
    assert page.status == 409 and "sold out" in page.body
    assert server.state(sid, "tickets")["orders"] == []
    ok = call(server, sid, "POST", "/tickets/buy", b"event=orchestra&qty=3")
    assert ok.status == 200 and server.state(sid, "tickets")["seats"]["orchestra"] == 0
    assert call(server, sid, "POST", "/tickets/buy", b"event=orchestra&qty=1").status == 409


def test_form_books_only_on_confirm(server):
    sid = server.new_session()
    review = call(server, sid, "POST", "/form/review",
                  b"name=Ana+Lima&email=ana%40example.org&service=Passport+renewal&date=2026-12-14")
    assert "Confirm booking" in review.body
    state = server.state(sid, "form")
    assert state["draft"] == get_task("form-prepare-passport").facts["draft"] and state["bookings"] == []
    assert "CS-0001" in call(server, sid, "POST", "/form/confirm").body
    assert len(server.state(sid, "form")["bookings"]) == 1
    assert call(server, sid, "POST", "/form/review", b"name=x").status == 422


def test_loopback_only_and_body_cap(server):
    with pytest.raises(ValueError, match="loopback"):
        SiteServer(host="0.0.0.0")
    req = urllib.request.Request(server.base_url + "/shop/cart/add", data=b"x" * (65 * 1024), method="POST")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 413
    with urllib.request.urlopen(server.base_url + "/library/branch/riverside", timeout=5) as resp:
        assert "11:00-15:00" in resp.read().decode()


def test_tasks_and_rows():
    rows = task_rows(["library-riverside-saturday"], repeat=2)
    assert len(rows) == 2 and rows[0]["task_id"] == "library-riverside-saturday"
    assert rows[0]["prompt"][0]["content"] == TASKS["library-riverside-saturday"].instruction
    task = get_task("tickets-jazz-sold-out").to_task("http://127.0.0.1:1")
    assert task.start_url == "http://127.0.0.1:1/tickets/" and "blocked" not in task.metadata
    with pytest.raises(KeyError, match="unknown browser task"):
        get_task("nope")


def test_browser_is_an_optional_extra():
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    project = tomllib.loads((repo / "pyproject.toml").read_text())
    assert not any("playwright" in d for d in project["project"]["dependencies"])
    assert project["project"]["optional-dependencies"]["browser"] == ["playwright>=1.45"]
    packages = project["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert "browser_env" in packages and "cua_verifier" in packages
    probe = "import sys, browser_env; print('playwright' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], cwd=repo, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]  # the core stays light until a browser is needed
