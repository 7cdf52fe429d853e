"""A ticket office: events with a seat count; buying lowers it and a sold-out event refuses."""
from __future__ import annotations

from typing import Any

from .base import Page, Site, esc, frame

EVENTS = {
    "jazz": {"name": "Jazz Night", "date": "Friday 20:00", "price": 35.0, "seats": 0},
    "comedy": {"name": "Comedy Hour", "date": "Saturday 19:30", "price": 22.0, "seats": 40},
    "orchestra": {"name": "City Orchestra", "date": "Sunday 17:00", "price": 48.0, "seats": 3},
}


class TicketSite(Site):
    name = "tickets"
    title = "Ticket Office"

    def initial_state(self) -> dict[str, Any]:
        return {"seats": {k: e["seats"] for k, e in EVENTS.items()}, "orders": []}

    def handle(self, state, method, path, query, form) -> Page:
        parts = [p for p in path.split("/") if p]
        nav = "<a href='/tickets/'>Events</a>"
        if not parts:
            rows = "".join(
                f"<div class='card'><a href='/tickets/event/{k}'>{esc(e['name'])}</a> - {e['date']} "
                + ("<span class='warn'>SOLD OUT</span>" if state["seats"][k] == 0 else
                   f"<span class='price'>${e['price']:.2f}</span>") + "</div>" for k, e in EVENTS.items())
            return Page(frame(self.title, "<h2>Upcoming events</h2>" + rows, nav=nav))
        if parts[0] == "event" and len(parts) == 2 and parts[1] in EVENTS:
            return self._event(state, parts[1], nav)
        if parts == ["buy"] and method == "POST":
            key = form.get("event", "")
            if key not in EVENTS:
                return Page.not_found("event")
            try:
                qty = int(form.get("qty", "1"))
            except ValueError:
                qty = 0
            left = state["seats"][key]
            if qty < 1 or qty > left:
                msg = "This event is sold out." if left == 0 else f"Only {left} seats left."
                return Page(frame(self.title, f"<p class='warn'>{msg}</p>", nav=nav), status=409)
            state["seats"][key] = left - qty
            state["orders"].append({"event": key, "qty": qty})
            n = len(state["orders"])
            body = (f"<h2>Order confirmed</h2><p>Order #{n}: {qty} ticket(s) for {esc(EVENTS[key]['name'])}, "
                    f"total ${qty * EVENTS[key]['price']:.2f}.</p>")
            return Page(frame(self.title, body, nav=nav))
        return Page.not_found()

    def _event(self, state, key, nav) -> Page:
        e, left = EVENTS[key], state["seats"][key]
        head = f"<h2>{esc(e['name'])}</h2><p>{e['date']} - ${e['price']:.2f} per ticket</p>"
        if left == 0:
            body = head + "<p class='warn'>SOLD OUT - no tickets are available for this event.</p>"
        else:
            body = head + (f"<p>{left} seats left</p><form action='/tickets/buy' method='post'>"
                           f"<input type='hidden' name='event' value='{key}'>"
                           f"<input name='qty' value='1' size='2' aria-label='Tickets'>"
                           f"<button type='submit'>Buy tickets</button></form>")
        return Page(frame(self.title, body, nav=nav))
