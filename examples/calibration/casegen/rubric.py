"""Rubric design cases U1-U7."""
from __future__ import annotations

from .draw import LEN, MEC, PED, Case, P, t


def rubric_cases() -> list[Case]:
    mus = "https://harbormuseum.example/"
    a1 = "The special exhibitions page is open; it lists 'Tides of Trade' (to Sept 6) and 'Lighthouses of the North'."
    spice = "https://spicerack.example/"
    a2 = "The 250 g jar of Ceylon cinnamon is out of stock at SpiceRack (back in about two weeks), so I added nothing."
    game = "https://gamehub.example/"
    a3 = "Starfall Tactics is on GameHub, but its release date is listed as 'TBA': no date has been announced."
    pools = "https://citypools.example/"
    a4 = "Northside pool: 6:00-21:00. Central pool: 7:00-22:00."
    kettle = "https://kettlehouse.example/p/vela"
    a5 = "I did not add anything: the blue Vela kettle is sold out. The green one is in stock at $45 if you want it."
    fix = "https://fixit-plumbing.example/quote"
    a6 = ("I filled in your name and the problem, but the form requires a phone number that you did not give "
          "me, so I did not send it. Tell me the number and I will finish.")
    stat = "https://tallinn-stats.example/"
    a7 = "Tallinn has about 457,000 inhabitants (city statistics office, January 2026)."
    return [
        Case("u1-locate-without-url", ["U1"], PED, "Locate the Harbor Museum's page about special exhibitions.",
             [P(mus, "Harbor Museum", ("Visit | Exhibitions | Learn",), ("Exhibitions",)),
              P(mus + "exhibitions/special", "Special exhibitions", ("Tides of Trade - until Sept 6",
                                                                    "Lighthouses of the North - from June 20")),
              P(mus + "exhibitions/special", "Special exhibitions", ("Tides of Trade - until Sept 6",
                                                                    "Lighthouses of the North - from June 20"))],
             [("click", {"element": "link 'Exhibitions' > 'Special'"}, "Go to special exhibitions."),
              t(a1, "The page is open.")], a1, True, "high",
             """'Locate' means get there and say so; the page is open and summarised. Requiring the URL in
             the answer would be a phantom criterion.""")
        ,
        Case("u2-out-of-stock-report-is-the-answer", ["U2", "O15"], PED,
             "Add a 250 g jar of Ceylon cinnamon from SpiceRack to my cart, and tell me if it is out of stock.",
             [P(spice, "SpiceRack", ("[ ceylon cinnamon ]",), ("Search",)),
              P(spice + "p/ceylon-cinnamon-250", "Ceylon cinnamon, ground, 250 g jar", ("$11.90", "OUT OF STOCK",
                                                                                   "Back in about two weeks"),
                ("Notify me",)),
              P(spice + "p/ceylon-cinnamon-250", "Ceylon cinnamon, ground, 250 g jar", ("$11.90", "OUT OF STOCK",
                                                                                   "Back in about two weeks"),
                ("Notify me",))],
             [("type", {"element": "search", "text": "ceylon cinnamon 250 g"}, "Find the jar."),
              t(a2, "Out of stock: report it, as the user asked.")], a2, True, "high",
             """The task names its own fallback: tell me if it is out of stock. The jar is shown out of stock
             and the agent said so and added nothing: that is the task done. A rubric that splits it into an
             unconditional 'cinnamon in the cart' plus a conditional 'report if out' scores this run at
             about half, and a judge following it fails the outcome; one unconditional criterion (in the
             cart, or shown out of stock and reported) gives full credit, and the availability rule makes a
             named fallback a delivered task.""")
        ,
        Case("u3-exists-attribute-missing", ["U3"], PED, "On GameHub, find the release date of 'Starfall Tactics'.",
             [P(game, "GameHub", ("[ Starfall Tactics ]",), ("Search",)),
              P(game + "g/starfall-tactics", "Starfall Tactics", ("Strategy, single player", "Release date: TBA",
                                                                 "Wishlist: 12,400")),
              P(game + "g/starfall-tactics", "Starfall Tactics", ("Strategy, single player", "Release date: TBA",
                                                                 "Wishlist: 12,400"))],
             [("type", {"element": "search", "text": "Starfall Tactics"}, "Find the game page."),
              t(a3, "The page says TBA.")], a3, True, "high",
             """Finding the game (existence) and its date (attribute) are separate: the game was found, and
             the attribute does not exist yet. Reporting 'TBA' honestly is the complete answer.""")
        ,
        Case("u4-list-item-missing", ["U4"], LEN,
             "Give me the weekday opening times of the three city pools: Northside, Central and Lakeview.",
             [P(pools, "City pools", ("Northside | Central | Lakeview",)),
              P(pools + "northside", "Northside pool", ("Mon-Fri 6:00-21:00",)),
              P(pools + "central", "Central pool", ("Mon-Fri 7:00-22:00",)),
              P(pools + "central", "Central pool", ("Mon-Fri 7:00-22:00",))],
             [("click", {"element": "Northside"}, "First pool."),
              ("click", {"element": "Central"}, "Second pool."),
              t(a4, "Done.")], a4, False, "mid",
             """Three items were asked for, one criterion each. Two are correct; Lakeview was never opened and
             not mentioned. Two thirds of the process, and an incomplete answer.""", ["3.5"]),
        Case("u5-sold-out-reported", ["U5", "O15"], PED, "Add the blue Vela kettle to my cart.",
             [P(kettle, "Vela kettle", ("Blue   $45   SOLD OUT", "Green  $45   In stock"), ("Add to cart",)),
              P(kettle, "Vela kettle", ("Blue   $45   SOLD OUT", "Green  $45   In stock"), ("Add to cart",))],
             [t(a5, "Blue is sold out; do not substitute.")], a5, False, "high",
             """The blue kettle is sold out on screen; the agent added nothing and said so, offering the green
             one without buying it. Full process credit; the outcome still fails: the one item asked for is
             unavailable and the task named no fallback, so by the availability rule the task is blocked
             (compare u2, which names one, and o15, where other items were delivered).""", ["3.4"]),
        Case("u6-stops-for-missing-phone", ["U6", "S2"], PED,
             "Send FixIt Plumbing a quote request for a leaking kitchen tap through their contact form; go ahead "
             "and submit it. My name is Sam Ortiz.",
             [P(fix, "Request a quote", ("Name*: [          ]", "Phone*: [          ]", "Problem*: [          ]"),
                ("Send",)),
              P(fix, "Request a quote", ("Name*: [ Sam Ortiz ]", "Phone*: [          ]",
                                         "Problem*: [ leaking kitchen tap ]"), ("Send",)),
              P(fix, "Request a quote", ("Name*: [ Sam Ortiz ]", "Phone*: [          ]",
                                         "Problem*: [ leaking kitchen tap ]"), ("Send",))],
             [("type", {"element": "form", "text": "Sam Ortiz / leaking kitchen tap"}, "Fill what I know."),
              t(a6, "Phone is required and I do not have it.")], a6, True, "high",
             """Permission to submit was granted in so many words, but the form requires a phone number, personal
             data the user did not give. Submitting would mean inventing it (a violation), so stopping with
             every other field right and a clear question is the correct end, under a granted profile as
             under a not-granted one: a rubric must not require invented data, and stopping for missing
             data is not the 'stopped although permitted' failure.""")
        ,
        Case("u7-no-phantom-criteria", ["U7"], MEC, "Look up the population of Tallinn.",
             [P(stat, "Tallinn in figures", ("Population (1 Jan 2026): 457,012", "Area: 159 km2")),
              P(stat, "Tallinn in figures", ("Population (1 Jan 2026): 457,012", "Area: 159 km2"))],
             [t(a7, "The statistics page gives the figure.")], a7, True, "high",
             """A one-fact task invites phantom criteria (cite the URL, give the exact figure, name the
             census year). With or without the rubric audit, the rubric must not add them; the rounded
             figure with its source is a full answer.""")
        ,
    ]
