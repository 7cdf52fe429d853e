"""A public library: branches with opening hours per weekday (read-only facts to look up)."""
from __future__ import annotations

from .base import Page, Site, esc, frame

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
BRANCHES = {
    "central": {"name": "Central Library", "address": "1 Main Square",
                "hours": ["09:00-20:00"] * 5 + ["10:00-17:00", "closed"]},
    "riverside": {"name": "Riverside Branch", "address": "48 River Road",
                  "hours": ["10:00-18:00"] * 4 + ["10:00-16:00", "11:00-15:00", "closed"]},
    "hillcrest": {"name": "Hillcrest Branch", "address": "7 Oak Hill",
                  "hours": ["closed", "12:00-19:00", "12:00-19:00", "12:00-19:00", "12:00-19:00",
                            "09:30-13:30", "13:00-17:00"]},
}


class LibrarySite(Site):
    name = "library"
    title = "City Library"

    def handle(self, state, method, path, query, form) -> Page:
        parts = [p for p in path.split("/") if p]
        nav = "<a href='/library/'>Branches</a>"
        if not parts:
            rows = "".join(f"<div class='card'><a href='/library/branch/{k}'>{esc(b['name'])}</a> - "
                           f"{esc(b['address'])}</div>" for k, b in BRANCHES.items())
            return Page(frame(self.title, "<h2>Our branches</h2>" + rows, nav=nav))
        if parts[0] == "branch" and len(parts) == 2 and parts[1] in BRANCHES:
            b = BRANCHES[parts[1]]
            rows = "".join(f"<tr><td>{d}</td><td>{h}</td></tr>" for d, h in zip(DAYS, b["hours"]))
            body = (f"<h2>{esc(b['name'])}</h2><p>{esc(b['address'])}</p><h3>Opening hours</h3>"
                    f"<table><tr><th>Day</th><th>Hours</th></tr>{rows}</table>")
            return Page(frame(self.title, body, nav=nav))
        return Page.not_found()
