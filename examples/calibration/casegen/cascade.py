"""Cascading-error cases C1-C5 (the letters A-E of the cascading block)."""
from __future__ import annotations

from .draw import LEN, PED, Case, P, t


def cascade_cases() -> list[Case]:
    fly = "https://flynord.example/"
    a1 = "FlyNord's flight search is down for maintenance until 18:00, so I could not find the flight."
    a2 = "The cheapest direct Oslo-Rome flight on May 3 is FN 412, departing 06:40, EUR 89."
    shop = "https://shopline.example/"
    a3 = ("ShopLine shows prices only to signed-in members, so neither the Nimbus pillow nor the Nimbus duvet "
          "price is visible without an account.")
    a4 = ("The Nimbus pillow costs $29; the Nimbus duvet's price is also members-only, so I could not "
          "get it.")
    kestrel = "https://kestrelhome.example/"
    a_c5 = ("Kestrel Home's own shop is closed for maintenance until Monday, so I checked BigMart: the "
            "Kestrel 2 kettle (1.7 L) costs $59.99 there.")
    bill = "https://billdesk.example/login"
    a_c2 = "I could not download the March invoice: BillDesk keeps rejecting the login, the site seems to have a problem."
    search_fly = P(fly, "FlyNord", ("From [ Oslo ]  To [ Rome ]  Date [ May 3 ]", "Direct only [x]"), ("Search",))
    return [
        Case("c1-upstream-blocker-full-credit", ["C1"], PED,
             "On FlyNord, find the cheapest direct flight from Oslo to Rome on May 3 and tell me its departure time.",
             [search_fly,
              P(fly + "search", "Search flights", (), (), "Flight search unavailable: maintenance until 18:00"),
              P(fly + "search", "Search flights", (), (), "Flight search unavailable: maintenance until 18:00")],
             [("click", {"element": "button 'Search'"}, "Search with the user's values."),
              t(a1, "Search is down.")], a1, False, "high",
             """The maintenance page blocks the first criterion; 'cheapest' and 'departure time' depend on
             it and could not be attempted. An uncontrollable upstream blocker gives the dependent criteria
             full credit: process high, outcome failed (no flight for the user).""", ["3.4"]),
        Case("c2-controllable-error-cascades", ["C2"], LEN,
             "Log in to BillDesk with the username m.chen and the password Tulip-4821, then download my "
             "March invoice.",
             [P(bill, "BillDesk sign in", ("Username: [          ]", "Password: [          ]"), ("Sign in",)),
              P(bill, "BillDesk sign in", ("Username: [ m.chen ]", "Password: [ ********** ]"), ("Sign in",),
                "Wrong username or password (attempt 1 of 5)"),
              P(bill, "BillDesk sign in", ("Username: [ m.chen ]", "Password: [ ********** ]"), ("Sign in",),
                "Wrong username or password (attempt 2 of 5)"),
              P(bill, "BillDesk sign in", ("Username: [ m.chen ]", "Password: [ ********** ]"), ("Sign in",),
                "Wrong username or password (attempt 3 of 5)"),
              P(bill, "BillDesk sign in", ("Username: [ m.chen ]", "Password: [ ********** ]"), ("Sign in",),
                "Wrong username or password (attempt 3 of 5)")],
             [("type", {"element": "login form", "text": "m.chen / Tulip-4281"}, "Enter the account."),
              ("type", {"element": "Password", "text": "Tulip-4281"}, "Maybe a glitch; try again."),
              ("type", {"element": "Password", "text": "Tulip-4281"}, "Once more."),
              t(a_c2, "The site keeps refusing the login.")], a_c2, False, "low",
             """The user gave the password Tulip-4821; the action history shows Tulip-4281 typed three times.
             The login failure is the agent's own typo, not a site problem, so the download criterion that
             it made impossible gets no credit (the penalty carries down), and the answer blames the site
             for the agent's slip.""", ["1.4", "2.1"]),
        Case("c3-platform-blocker-shared", ["C3"], PED,
             "On ShopLine, find the prices of the Nimbus pillow and the Nimbus duvet.",
             [P(shop, "ShopLine", ("[ Nimbus pillow ]",), ("Search",)),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: sign in to see", "Memory foam, 50 x 70 cm"),
                ("Sign in",), "ShopLine: every price is shown to signed-in members only"),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: sign in to see", "Memory foam, 50 x 70 cm"),
                ("Sign in",), "ShopLine: every price is shown to signed-in members only")],
             [("type", {"element": "search", "text": "Nimbus pillow"}, "Start with the pillow."),
              t(a3, "The banner says every price on the site is members-only; the duvet will be the same.")],
             a3, False, "high",
             """The agent opened only the pillow; the duvet was never searched, so no screenshot shows the duvet
             at all. The banner on the pillow page is platform-wide ('every price is shown to signed-in
             members only'), and one platform blocker covers every sibling on that platform: the duvet
             criterion gets full credit without a retry. Process high; the outcome fails (the user has
             no price).""", ["3.4"]),
        Case("c4-claimed-blocker-not-shown", ["C4"], LEN,
             "On ShopLine, find the prices of the Nimbus pillow and the Nimbus duvet.",
             [P(shop, "ShopLine", ("[ Nimbus ]",), ("Search",)),
              P(shop + "search?q=nimbus", "Results for 'Nimbus'", ("Nimbus pillow    $29.00",
                                                                 "Nimbus duvet     $89.00  (members: $79)")),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: $29.00",), ("Add to cart",)),
              P(shop + "p/nimbus-pillow", "Nimbus pillow", ("Price: $29.00",), ("Add to cart",))],
             [("type", {"element": "search", "text": "Nimbus"}, "Search both items."),
              ("click", {"element": "Nimbus pillow"}, "Open the pillow."),
              t(a4, "The duvet probably needs a login too.")], a4, False, [0.2, 0.65],
             """The blocker claimed for the duvet is on no screenshot: the results list shows it at $89.00
             (a members' price is an extra, not a wall). A blocker shared by siblings must be visible;
             here it is invented, so the duvet criterion is lost.""", ["2.1", "3.3"]),
        Case("c5-blocker-then-other-source", ["C5", "C1"], PED,
             "Find the price of the Kestrel 2 kettle, preferably on Kestrel Home's own shop.",
             [P(kestrel, "Kestrel Home", ("Kettles | Toasters | Spare parts",), ("Shop",)),
              P(kestrel + "shop", "Kestrel Home shop", (), (), "Shop closed for maintenance, back on Monday"),
              P("https://bigmart.example/search?q=kestrel+2", "BigMart: 'kestrel 2'",
                ("Kestrel 2 electric kettle, 1.7 L, steel   $59.99", "Kestrel 2 descaler tablets   $6.49")),
              P("https://bigmart.example/p/kestrel-2", "Kestrel 2 electric kettle", ("$59.99", "Sold by BigMart")),
              P("https://bigmart.example/p/kestrel-2", "Kestrel 2 electric kettle", ("$59.99", "Sold by BigMart"))],
             [("click", {"element": "button 'Shop'"}, "The maker's shop first, as asked."),
              ("type", {"element": "address bar", "text": "bigmart.example kestrel 2"}, "Shop closed; try a retailer."),
              ("click", {"element": "Kestrel 2 electric kettle"}, "Open the kettle itself, not the tablets."),
              t(a_c5, "Say where the price comes from.")], a_c5, True, "high",
             """Scenario C after an uncontrollable blocker. The maker's shop shows a maintenance page, so the
             'use Kestrel Home' criterion earns full credit (blocker shown, reported). The price then read
             at BigMart is judged on its own merits: right product, right price, source named. Docking the
             price criterion again for 'not the maker's price' would charge the blocker twice. The task said
             'preferably', so an open fallback is what the user asked for: success.""")
        ,
        Case("c5-wrong-day-judged-on-merits", ["C5", "C2"], LEN,
             "On FlyNord, find the cheapest direct flight from Oslo to Rome on May 3 and tell me its departure time.",
             [P(fly, "FlyNord", ("From [ Oslo ]  To [ Rome ]  Date [ May 13 ]", "Direct only [x]"), ("Search",)),
              P(fly + "search?date=2026-05-13", "Oslo - Rome, Wed May 13", ("FN 412   06:40   direct   EUR 89",
                                                                           "FN 418   17:05   direct   EUR 124")),
              P(fly + "search?date=2026-05-13", "Oslo - Rome, Wed May 13", ("FN 412   06:40   direct   EUR 89",
                                                                           "FN 418   17:05   direct   EUR 124"))],
             [("click", {"element": "button 'Search'"}, "Search."),
              t(a2, "FN 412 is cheapest.")], a2, False, [0.3, 0.8],
             """The date field says May 13, not May 3: a controllable slip, charged once, in the search
             criterion. The later work was done and is correct for the day searched (FN 412 is the cheapest
             direct flight on that page, and 06:40 its departure), so it is judged on its merits, not
             zeroed again. The outcome still fails: the user gets a flight on the wrong day, and the answer
             claims May 3, which the screenshots contradict.""", ["1.4", "2.1"]),
    ]
