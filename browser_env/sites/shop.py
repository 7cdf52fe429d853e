"""A shop: product search, category and price filters, sorting, product pages and a cart."""
from __future__ import annotations

from typing import Any

from .base import Page, Site, esc, frame

PRODUCTS = [
    {"id": "m1", "name": "Wireless Mouse Basic", "category": "mice", "price": 14.99},
    {"id": "m2", "name": "Wireless Mouse Pro", "category": "mice", "price": 39.50},
    {"id": "m3", "name": "Wired Optical Mouse", "category": "mice", "price": 9.75},
    {"id": "m4", "name": "Wireless Travel Mouse", "category": "mice", "price": 12.49},
    {"id": "k1", "name": "Mechanical Keyboard", "category": "keyboards", "price": 89.00},
    {"id": "k2", "name": "Slim Wireless Keyboard", "category": "keyboards", "price": 45.25},
    {"id": "h1", "name": "USB-C Hub 7-in-1", "category": "accessories", "price": 29.99},
    {"id": "h2", "name": "Laptop Stand", "category": "accessories", "price": 24.00},
]
BY_ID = {p["id"]: p for p in PRODUCTS}
CATEGORIES = sorted({p["category"] for p in PRODUCTS})


def money(value: float) -> str:
    return f"${value:.2f}"


class ShopSite(Site):
    name = "shop"
    title = "Gadget Shop"

    def initial_state(self) -> dict[str, Any]:
        return {"cart": {}}  # product id -> quantity

    def _nav(self, state: dict[str, Any]) -> str:
        n = sum(state["cart"].values())
        return f"<a href='/shop/'>Home</a><a href='/shop/cart'>Cart ({n})</a>"

    def handle(self, state, method, path, query, form) -> Page:
        parts = [p for p in path.split("/") if p]
        if not parts:
            return self._listing(state, query)
        if parts[0] == "item" and len(parts) == 2:
            return self._item(state, parts[1])
        if parts == ["cart"]:
            return self._cart(state)
        if parts == ["cart", "add"] and method == "POST":
            pid = form.get("id", "")
            if pid not in BY_ID:
                return Page.not_found("product")
            qty = max(1, min(9, int(form.get("qty", "1") or 1)))
            state["cart"][pid] = state["cart"].get(pid, 0) + qty
            return Page.redirect("/shop/cart")
        if parts == ["cart", "remove"] and method == "POST":
            state["cart"].pop(form.get("id", ""), None)
            return Page.redirect("/shop/cart")
        return Page.not_found()

    def _listing(self, state, query) -> Page:
        q = query.get("q", "").strip().lower()
        cat = query.get("category", "")
        try:
            max_price = float(query["max_price"]) if query.get("max_price") else None
        except ValueError:
            max_price = None
        items = [p for p in PRODUCTS if (not q or all(w in p["name"].lower() for w in q.split()))
                 and (not cat or p["category"] == cat) and (max_price is None or p["price"] <= max_price)]
        sort = query.get("sort", "")
        if sort in ("price_asc", "price_desc"):
            items.sort(key=lambda p: p["price"], reverse=sort == "price_desc")
        options = "".join(f"<option value='{c}'{' selected' if c == cat else ''}>{c}</option>"
                          for c in CATEGORIES)
        sorts = "".join(f"<option value='{v}'{' selected' if v == sort else ''}>{label}</option>" for v, label in
                        (("", "Relevance"), ("price_asc", "Price: low to high"),
                         ("price_desc", "Price: high to low")))
        search = (f"<form action='/shop/' method='get'><input name='q' placeholder='Search products' "
                  f"aria-label='Search' value='{esc(query.get('q', ''))}'>"
                  f"<select name='category' aria-label='Category'><option value=''>All categories</option>"
                  f"{options}</select><input name='max_price' placeholder='Max price' aria-label='Max price' "
                  f"value='{esc(query.get('max_price', ''))}' size='8'>"
                  f"<select name='sort' aria-label='Sort'>{sorts}</select><button type='submit'>Search</button>"
                  f"</form>")
        rows = "".join(f"<div class='card'><a href='/shop/item/{p['id']}'>{esc(p['name'])}</a> "
                       f"<span class='price'>{money(p['price'])}</span></div>" for p in items)
        body = search + f"<p>{len(items)} products</p>" + (rows or "<p>No products match.</p>")
        return Page(frame(self.title, body, nav=self._nav(state)))

    def _item(self, state, pid) -> Page:
        p = BY_ID.get(pid)
        if p is None:
            return Page.not_found("product")
        body = (f"<h2>{esc(p['name'])}</h2><p>Category: {p['category']}</p>"
                f"<p class='price'>{money(p['price'])}</p>"
                f"<form action='/shop/cart/add' method='post'><input type='hidden' name='id' value='{pid}'>"
                f"<input name='qty' value='1' size='2' aria-label='Quantity'>"
                f"<button type='submit'>Add to cart</button></form>")
        return Page(frame(self.title, body, nav=self._nav(state)))

    def _cart(self, state) -> Page:
        cart = state["cart"]
        if not cart:
            body = "<h2>Your cart</h2><p>Your cart is empty.</p>"
        else:
            rows = "".join(f"<tr><td>{esc(BY_ID[i]['name'])}</td><td>{q}</td><td>{money(BY_ID[i]['price'] * q)}"
                           f"</td><td><form action='/shop/cart/remove' method='post'><input type='hidden' "
                           f"name='id' value='{i}'><button type='submit'>Remove</button></form></td></tr>"
                           for i, q in cart.items())
            total = sum(BY_ID[i]["price"] * q for i, q in cart.items())
            body = (f"<h2>Your cart</h2><table><tr><th>Item</th><th>Qty</th><th>Price</th><th></th></tr>{rows}"
                    f"</table><p>Total: <span class='price'>{money(total)}</span></p>")
        return Page(frame(self.title, body, nav=self._nav(state)))
