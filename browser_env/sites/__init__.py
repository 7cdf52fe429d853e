"""Small stateful task sites served on loopback for the browser environment.

Each site is a class with `handle(state, method, path, query, form) -> Page` over a plain dict of
per-episode state; `server.SiteServer` routes `/<site>/...` to it and keys the state by a session
cookie, so every episode starts from a fresh state and episodes never see each other.
"""
from __future__ import annotations

from .base import Page, Site
from .form import FormSite
from .library import LibrarySite
from .shop import ShopSite
from .tickets import TicketSite

SITES: dict[str, type[Site]] = {s.name: s for s in (ShopSite, LibrarySite, TicketSite, FormSite)}

__all__ = ["SITES", "FormSite", "LibrarySite", "Page", "ShopSite", "Site", "TicketSite"]
